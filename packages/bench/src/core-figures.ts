import type { Redis } from 'ioredis';
import { RAW_API, type Provider } from './providers.js';
import { commandCount, commandsByName } from './stats.js';
import { forkedLoop, localLoop, type BenchLoop, type LoopKind } from './loop-host.js';
import type { WindowCpu } from './loop-window.js';
import type { LoopEnv } from './product-loop.js';

/** What the core figures need from main: the Redis of the bench (an admin connection to read its counters), the rest of a loop's env. */
export interface CoreContext extends LoopEnv {
  admin: Redis;
}

const NUM = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const CORE = {
  /**
   * Runs in each 50-runs window: long enough that each holds many major collections (where one falls decides much of
   * a short window's figure: 100-run windows of one loop ranged 0.8–2.5 ms per iteration) and that its loop is busy
   * throughout (loops that took turns window by window read unequally: docs/BENCHMARKS.md, session 8).
   */
  runs: NUM('BENCH_CORE_RUNS', 1500),
  parallel: NUM('BENCH_CORE_PARALLEL', 50),
  sequential: NUM('BENCH_CORE_SEQUENTIAL', 30),
  /**
   * Runs each loop makes before any is measured: the figures are a long-lived process's, at steady state. The
   * product has more code for the JIT to compile than the raw loop: after 50 runs it was still compiling 100–300
   * functions a second (--trace-opt), after 1000 a few (docs/BENCHMARKS.md). What the warm-up cost is reported too.
   */
  warmup: NUM('BENCH_WARMUP', 1000),
  rounds: NUM('BENCH_CORE_ROUNDS', 2),
  /** Runs each loop makes, unmeasured, just before each of its 50-runs windows (BENCH_CORE_REWARM). */
  rewarm: NUM('BENCH_CORE_REWARM', 500),
  /** BENCH_CORE_SHARED=1: every loop in the bench's own process (the method of sessions 3–7), else one process each. */
  shared: process.env.BENCH_CORE_SHARED === '1',
  /** BENCH_CORE_LOOPS=raw,product: measure only these loops (quick A/B runs). */
  only: process.env.BENCH_CORE_LOOPS?.split(',') ?? null,
};

/** One measured workload: wall time and the CPU of the loop's process (WindowCpu), and Redis over its window. */
export interface Measured extends WindowCpu {
  commands: number;
  /** Bytes Redis received from (`in`) and sent to (`out`) its clients over the window (INFO stats). */
  redisBytes: { in: number; out: number };
}

/** One window of `loop`: its process measures its CPU, this one the Redis commands and bytes of the window. */
async function measured(
  admin: Redis,
  loop: BenchLoop,
  runs: number,
  parallel: number,
  name: string,
): Promise<Measured> {
  const cpu = await loop.window(runs, parallel, name, () => admin.config('RESETSTAT'));
  const commands = await commandCount(admin);
  if (process.env.BENCH_CORE_COMMANDS && parallel > 1)
    console.log(`  ${name}: Redis commands per iteration by name: ${await commandsByName(admin, cpu.iterations)}`);
  const stats = await admin.info('stats');
  const bytes = (field: string) => Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  return { ...cpu, commands, redisBytes: { in: bytes('total_net_input_bytes'), out: bytes('total_net_output_bytes') } };
}

export type LoopFigures = { loaded: Measured; sequential: Measured };
export interface CoreFigures {
  provider: Provider;
  raw: LoopFigures;
  /** The raw loop plus SPEC's durability round trips alone (durable-floor-loop.ts). */
  floor: LoopFigures;
  product: LoopFigures;
  /** Issue 26: the product with the tool local, the raw loop with the tool inline, the OpenAI Agents SDK. */
  local: LoopFigures;
  inline: LoopFigures;
  sdk: LoopFigures;
  /** Each round's CPU per iteration at 50 runs, product ÷ raw: how far one round's ratio is from another's. */
  roundRatios: number[];
  /** What each fresh process paid over its warm-up runs (its JIT compiling). */
  warmup: Partial<Record<LoopKind, WindowCpu>>;
}

const sum = (a: Measured, b: Measured): Measured => ({
  iterations: a.iterations + b.iterations,
  seconds: a.seconds + b.seconds,
  cpuMs: a.cpuMs + b.cpuMs,
  mainThreadMs: a.mainThreadMs + b.mainThreadMs,
  systemMs: a.systemMs + b.systemMs,
  commands: a.commands + b.commands,
  instructions: a.instructions + b.instructions,
  redisBytes: { in: a.redisBytes.in + b.redisBytes.in, out: a.redisBytes.out + b.redisBytes.out },
});
const ZERO: Measured = {
  iterations: 0,
  seconds: 0,
  cpuMs: 0,
  mainThreadMs: 0,
  systemMs: 0,
  commands: 0,
  instructions: 0,
  redisBytes: { in: 0, out: 0 },
};

/**
 * The raw loop, the durable floor and the product, each in a process of its own (BENCH_CORE_SHARED=1: all in this
 * one), all started and warmed up before any is measured; then rounds of measurements, one workload at a time, the
 * order alternating (drift on a shared machine cancels out), summed over the rounds. The loops not being measured sit
 * idle meanwhile (a few Redis commands and < 3 ms of CPU a second).
 */
export async function coreFigures(ctx: CoreContext, provider: Provider): Promise<CoreFigures> {
  const start = CORE.shared ? localLoop : forkedLoop;
  const names: Record<LoopKind, string> = {
    raw: `raw loop (${provider})`,
    floor: `durable floor (${provider})`,
    product: `agentloop (${provider})`,
    local: `agentloop, tool local (${provider})`,
    inline: `raw loop, tool inline (${provider})`,
    sdk: `OpenAI Agents SDK (${provider})`,
  };
  const prefixes: Record<LoopKind, string> = {
    raw: `bench-core-raw-${provider}`,
    floor: `bench-core-floor-${provider}`,
    product: `bench-core-${provider}`,
    local: `bench-core-local-${provider}`,
    inline: `bench-core-inline-${provider}`,
    sdk: `bench-core-sdk-${provider}`,
  };
  const { admin: _admin, ...env } = ctx;
  // the Agents SDK speaks Chat Completions here (the mock's wire and the product's `openai` provider)
  const kinds = LOOP_KINDS.filter(
    (k) => (!CORE.only || CORE.only.includes(k)) && (k !== 'sdk' || provider === 'openai'),
  );
  const none = () => ({ loaded: ZERO, sequential: ZERO });
  const out: CoreFigures = {
    provider,
    raw: none(),
    floor: none(),
    product: none(),
    local: none(),
    inline: none(),
    sdk: none(),
    roundRatios: [],
    warmup: {},
  };
  const loops: Array<[LoopKind, BenchLoop]> = [];
  try {
    for (const kind of kinds) loops.push([kind, await start({ ...env, kind, provider, prefix: prefixes[kind] })]);
    for (const [kind, loop] of loops)
      out.warmup[kind] = await loop.warmup(CORE.warmup, CORE.parallel, `${names[kind]} warm-up`);
    for (let r = 0; r < CORE.rounds; r++) {
      const perIteration: Partial<Record<LoopKind, number>> = {};
      for (const [kind, loop] of r % 2 ? [...loops].reverse() : loops) {
        // a loop that sat idle through the others' windows is back under load before its own is measured: without this,
        // the first window after an idle spell cost up to twice the steady figure (round 1: the loop warmed up last
        // measured 0.5–0.6× the one warmed up first)
        if (CORE.rewarm) await loop.warmup(CORE.rewarm, CORE.parallel, `${names[kind]} re-warm`);
        const loaded = await measured(ctx.admin, loop, CORE.runs, CORE.parallel, names[kind]);
        perIteration[kind] = loaded.cpuMs / loaded.iterations;
        out[kind].loaded = sum(out[kind].loaded, loaded);
        out[kind].sequential = sum(
          out[kind].sequential,
          await measured(ctx.admin, loop, CORE.sequential, 1, `${names[kind]} one at a time`),
        );
      }
      if (perIteration.product && perIteration.raw) out.roundRatios.push(perIteration.product / perIteration.raw);
    }
    return out;
  } finally {
    await Promise.allSettled(loops.map(([, loop]) => loop.close()));
  }
}

export const LOOP_KINDS = ['raw', 'floor', 'product', 'local', 'inline', 'sdk'] as const;
const LABELS: Record<LoopKind, string> = {
  raw: 'raw',
  floor: 'floor',
  product: 'agentloop',
  local: 'agentloop, local tool',
  inline: 'raw, tool inline',
  sdk: 'OpenAI Agents SDK',
};
const perIt = (m: Measured, v: number) => v / m.iterations;
const f2 = (n: number) => n.toFixed(2);
const kb = (m: Measured, bytes: number) => (bytes / m.iterations / 1024).toFixed(1);

/** The figures of one provider, for the report. */
export function coreLines(c: CoreFigures): string[] {
  const row = (name: string, m: { loaded: Measured; sequential: Measured }) =>
    `  ${name.padEnd(21)} ${(m.loaded.iterations / m.loaded.seconds).toFixed(0).padStart(12)} ${f2(perIt(m.loaded, m.loaded.cpuMs)).padStart(14)} ${perIt(m.loaded, m.loaded.commands).toFixed(1).padStart(17)} ${perIt(m.sequential, m.sequential.commands).toFixed(1).padStart(16)} ${f2(perIt(m.sequential, m.sequential.cpuMs)).padStart(14)}`;
  return [
    `core figures via ${c.provider} (raw loop: ${RAW_API[c.provider]} API through its SDK; ${c.product.loaded.iterations} iterations at ${CORE.parallel} runs in flight, ${c.product.sequential.iterations} one run at a time, in ${CORE.rounds} alternating rounds; ${CORE.warmup} warm-up runs each):`,
    `  ${''.padEnd(21)} ${'iterations/s'.padStart(12)} ${'CPU ms / iter'.padStart(14)} ${'Redis cmds / iter'.padStart(17)} ${'cmds / iter, 1×'.padStart(16)} ${'CPU ms, 1×'.padStart(14)}`,
    ...LOOP_KINDS.filter((k) => c[k].loaded.iterations).map((k) => row(LABELS[k], c[k])),
    `  a fresh process's warm-up (its first ${CORE.warmup} runs, ${CORE.parallel} in flight), CPU ms / iteration: ${LOOP_KINDS.flatMap((k) => (c.warmup[k] ? [`${k} ${f2(c.warmup[k].cpuMs / c.warmup[k].iterations)}`] : [])).join(', ')}`,
    ...instructionLines(c),
    ...(CORE.only && !(['raw', 'floor', 'product'] as const).every((k) => CORE.only!.includes(k))
      ? []
      : comparisons(c)),
  ];
}

/** Under BENCH_CORE_CALLGRIND: instructions per iteration (millions), each loop and ÷ raw. */
function instructionLines(c: CoreFigures): string[] {
  const kinds = LOOP_KINDS.filter((k) => c[k].loaded.instructions);
  if (!kinds.length) return [];
  const m = (x: Measured) => x.instructions / x.iterations / 1e6;
  const vsRaw = (x: Measured) => (c.raw.loaded.instructions ? ` (${f2(m(x) / m(c.raw.loaded))}× raw)` : '');
  return [
    // (one run at a time, the loops wait on Redis and the model most of each iteration, and what their timers do
    // meanwhile, fifty times slower under callgrind, outweighs the iteration: not a figure)
    `  instructions / iteration at ${CORE.parallel} runs (callgrind: user space, all threads), millions: ${kinds.map((k) => `${k} ${f2(m(c[k].loaded))}${vsRaw(c[k].loaded)}`).join(', ')}`,
  ];
}

/** The lines that compare the loops (all three measured). */
function comparisons(c: CoreFigures): string[] {
  return [
    `  the durable floor (the raw loop plus SPEC's round trips alone) ÷ raw: CPU ${f2(perIt(c.floor.loaded, c.floor.loaded.cpuMs) / perIt(c.raw.loaded, c.raw.loaded.cpuMs))}×, iterations/s ${f2(c.floor.loaded.iterations / c.floor.loaded.seconds / (c.raw.loaded.iterations / c.raw.loaded.seconds))}×; agentloop ÷ floor: CPU ${f2(perIt(c.product.loaded, c.product.loaded.cpuMs) / perIt(c.floor.loaded, c.floor.loaded.cpuMs))}×, iterations/s ${f2(c.product.loaded.iterations / c.product.loaded.seconds / (c.floor.loaded.iterations / c.floor.loaded.seconds))}×`,
    `  Redis traffic per iteration at ${CORE.parallel} runs, to Redis / from Redis: ${(['raw', 'floor', 'product'] as const).map((k) => `${k} ${kb(c[k].loaded, c[k].loaded.redisBytes.in)} / ${kb(c[k].loaded, c[k].loaded.redisBytes.out)} KB`).join(', ')}`,
    `  CPU / iteration at ${CORE.parallel} runs, agentloop ÷ raw, round by round: ${c.roundRatios.map((r) => `${f2(r)}×`).join(', ')}`,
    `  CPU ms / iter at ${CORE.parallel} runs on the main thread / on other threads (GC helpers, libuv): raw ${f2(perIt(c.raw.loaded, c.raw.loaded.mainThreadMs))} / ${f2(perIt(c.raw.loaded, c.raw.loaded.cpuMs - c.raw.loaded.mainThreadMs))}, agentloop ${f2(perIt(c.product.loaded, c.product.loaded.mainThreadMs))} / ${f2(perIt(c.product.loaded, c.product.loaded.cpuMs - c.product.loaded.mainThreadMs))}; in the kernel (all threads): raw ${f2(perIt(c.raw.loaded, c.raw.loaded.systemMs))}, agentloop ${f2(perIt(c.product.loaded, c.product.loaded.systemMs))}`,
    ...(c.raw.loaded.iterations !== c.product.loaded.iterations ||
    c.raw.sequential.iterations !== c.product.sequential.iterations
      ? [
          `  (!) the raw loop made ${c.raw.loaded.iterations} + ${c.raw.sequential.iterations} iterations, agentloop ${c.product.loaded.iterations} + ${c.product.sequential.iterations}: not the same workload`,
        ]
      : []),
  ];
}

/** The targets of issue 11 on these figures, met or MISSED. */
export function coreTargetLines(c: CoreFigures): string[] {
  const { raw, product } = c;
  if (!raw.loaded.iterations || !product.loaded.iterations)
    return [`  (the targets compare agentloop with the raw loop: BENCH_CORE_LOOPS left one out)`];
  const cpu = perIt(product.loaded, product.loaded.cpuMs) / perIt(raw.loaded, raw.loaded.cpuMs);
  const tput = product.loaded.iterations / product.loaded.seconds / (raw.loaded.iterations / raw.loaded.seconds);
  const cmdSeq =
    perIt(product.sequential, product.sequential.commands) / perIt(raw.sequential, raw.sequential.commands);
  const cmdLoaded = perIt(product.loaded, product.loaded.commands) / perIt(raw.loaded, raw.loaded.commands);
  const line = (what: string, v: number, target: string, met: boolean) =>
    `  ${what.padEnd(52)} ${f2(v)}×  (target ${target})  ${met ? 'met' : 'MISSED'}`;
  return [
    line(`CPU / iteration at ${CORE.parallel} runs vs raw loop (${c.provider})`, cpu, '≤ 1.1×', cpu <= 1.1),
    line(`iterations/s at ${CORE.parallel} runs vs raw loop (${c.provider})`, tput, '≥ 0.9×', tput >= 0.9),
    line(`Redis commands / iteration, one run at a time (${c.provider})`, cmdSeq, '≤ 1.2×', cmdSeq <= 1.2),
    line(`Redis commands / iteration at ${CORE.parallel} runs (${c.provider})`, cmdLoaded, '≤ 1.2×', cmdLoaded <= 1.2),
  ];
}
