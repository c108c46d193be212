import fc from 'fast-check';

// One fast-check seed for the whole run (chosen by the global setup, printed there): every property is replayable
// with AGENTLOOP_FUZZ_SEED=<seed> ./scripts/test.sh <file>.
const seed = Number(process.env.AGENTLOOP_FUZZ_SEED);
if (Number.isSafeInteger(seed)) fc.configureGlobal({ seed });
