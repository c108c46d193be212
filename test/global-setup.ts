import { resolveTestRedis, type OwnedRedis } from '../packages/testing/src/redis.js';

let server: OwnedRedis | null = null;

/** One Redis for the whole run: REDIS_URL, else a redis-server of our own, else a container (tests use their own key prefixes). */
export async function setup(): Promise<void> {
  const r = await resolveTestRedis();
  server = r.server;
  process.env.AGENTLOOP_TEST_REDIS_URL = r.url;
  // one fuzz seed per run (fixed when given): properties and samples draw from it, and it is printed to replay a failure
  const given = Number(process.env.AGENTLOOP_FUZZ_SEED);
  const seed = Number.isSafeInteger(given) ? given : Math.floor(Math.random() * 2 ** 31);
  process.env.AGENTLOOP_FUZZ_SEED = String(seed);
  console.log(`fuzz seed ${seed} (replay a failure: AGENTLOOP_FUZZ_SEED=${seed} ./scripts/test.sh <test file>)`);
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
