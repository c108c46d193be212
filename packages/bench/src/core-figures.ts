import fs from 'node:fs';
import http from 'node:http';
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Redis } from 'ioredis';
import { serve, type RunningProcess } from '@agentloop/cli/serve';
import { RawAgentLoop } from './raw-agent-loop.js';
import { DurableFloorLoop, postJson } from './durable-floor-loop.js';
import { rawModel } from './raw-model-call.js';
import { MODELS, RAW_API, type Provider } from './providers.js';
import { commandCount } from './stats.js';
import { profiled } from './profile.js';

/** What the core figures need from main: the Redis of the bench, the mock model, the tool module, the workload. */
export interface CoreContext {
  redisUrl: string;
  admin: Redis;
  /** A connection for BullMQ (maxRetriesPerRequest: null). */
  bull: Redis;
  mockUrl: string;
  toolsModule: string;
  /** Model calls per run (the mock's `tool-loop N`: N-1 with one no-op tool call, then the answer). */
  iterations: number;
  concurrency: { orchestrator: number; tools: number };
  prior: Array<{ role: string; content: string }>;
}

const NUM = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const CORE = {
  runs: NUM('BENCH_CORE_RUNS', 200),
  parallel: NUM('BENCH_CORE_PARALLEL', 50),
  sequential: NUM('BENCH_CORE_SEQUENTIAL', 40),
  warmup: NUM('BENCH_WARMUP', 50),
  rounds: NUM('BENCH_CORE_ROUNDS', 3),
};
const SETTLE_MS = 50;

/** One measured workload: wall time, this process's CPU (user + system) and Redis commands over its window. */
export interface Measured {
  iterations: number;
  seconds: number;
  cpuMs: number;
  /** Of cpuMs, the main thread's (the rest: GC helper threads, libuv's pool, the inspector). */
  mainThreadMs: number;
  /** Of cpuMs, the kernel's (system time: socket writes and reads, epoll). */
  systemMs: number;
  commands: number;
  /** Bytes Redis received from (`in`) and sent to (`out`) its clients over the window (INFO stats). */
  redisBytes: { in: number; out: number };
}

const CLOCK_TICK_MS = 10; // USER_HZ = 100 on Linux
/** CPU of this process's main thread so far, in ms (Linux /proc; 0 elsewhere). */
function mainThreadCpuMs(): number {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * CLOCK_TICK_MS;
  } catch {
    return 0;
  }
}

interface Loop {
  iterations: number;
  run(): Promise<void>;
}

const STALL_MS = 30_000;

/**
 * `runs` runs, `parallel` in flight: each lane starts its next run when its previous one answered. Fails when no
 * iteration made progress for 30 s (a run that never answers would otherwise hang the bench).
 */
export async function lanes(loop: Loop, runs: number, parallel: number, name: string): Promise<void> {
  let next = 0;
  let answered = 0;
  let seen = loop.iterations;
  let timer: NodeJS.Timeout | undefined;
  const stalled = new Promise<never>((_, reject) => {
    timer = setInterval(() => {
      if (loop.iterations === seen) reject(new Error(`${name}: no iteration for ${STALL_MS / 1000} s, ${answered} of ${runs} runs answered`));
      seen = loop.iterations;
    }, STALL_MS);
  });
  try {
    await Promise.race([
      stalled,
      Promise.all(Array.from({ length: Math.min(parallel, runs) }, async () => {
        while (next++ < runs) {
          await loop.run();
          answered++;
        }
      })),
    ]);
  } finally {
    clearInterval(timer);
  }
}

v8.setFlagsFromString('--expose-gc');
const fullGc = runInNewContext('gc') as () => void;

/**
 * One workload's window. It starts on a collected heap and ends with a full collection, so each loop pays for
 * collecting its own garbage and none for the garbage of the loop measured before it (which otherwise decided in
 * which window a major GC fell: ±10 % from round to round).
 */
async function measured(admin: Redis, loop: Loop, runs: number, parallel: number, name: string): Promise<Measured> {
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  fullGc();
  await admin.config('RESETSTAT');
  const i0 = loop.iterations;
  const c0 = process.cpuUsage();
  const m0 = mainThreadCpuMs();
  const t0 = performance.now();
  await (parallel > 1 ? profiled(name, () => lanes(loop, runs, parallel, name)) : lanes(loop, runs, parallel, name));
  const seconds = (performance.now() - t0) / 1000;
  await new Promise((r) => setTimeout(r, SETTLE_MS)); // the last jobs' completion belongs to the window
  fullGc();
  const c = process.cpuUsage(c0);
  const mainThreadMs = mainThreadCpuMs() - m0;
  const commands = await commandCount(admin);
  const stats = await admin.info('stats');
  const bytes = (name: string) => Number(new RegExp(`^${name}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
  const redisBytes = { in: bytes('total_net_input_bytes'), out: bytes('total_net_output_bytes') };
  return { iterations: loop.iterations - i0, seconds, cpuMs: (c.user + c.system) / 1000, mainThreadMs, systemMs: c.system / 1000, commands, redisBytes };
}

/** The env of a product process (all roles) against the bench's Redis and mock. */
export function productEnv(ctx: Pick<CoreContext, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency'>, prefix: string): Record<string, string | undefined> {
  return {
    ...process.env, REDIS_URL: ctx.redisUrl, AGENTLOOP_PREFIX: prefix, AGENTLOOP_PORT: '0', AGENTLOOP_HOST: '127.0.0.1', AGENTLOOP_AUTH: 'disabled',
    AGENTLOOP_TOOL_MODULES: ctx.toolsModule, OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${ctx.mockUrl}/v1`, GEMINI_API_KEY: 'bench', GEMINI_BASE_URL: ctx.mockUrl, LOG_LEVEL: 'error',
    AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(ctx.concurrency.orchestrator), AGENTLOOP_TOOL_CONCURRENCY: String(ctx.concurrency.tools),
  };
}

/** The product, every role in this process: a run is created over HTTP and has answered after `iterations` iterations. */
export class ProductLoop implements Loop {
  iterations = 0;
  private proc: RunningProcess | null = null;
  private readonly counts = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly body: string;

  constructor(
    private readonly ctx: CoreContext,
    private readonly prefix: string,
    provider: Provider,
  ) {
    this.body = JSON.stringify({ input: ctx.prior, model: MODELS[provider], tools: ['noop'], limits: { maxIterations: ctx.iterations + 1 } });
  }

  async start(): Promise<void> {
    this.proc = await serve({
      roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
      env: productEnv(this.ctx, this.prefix),
      onIterationTimed: (t) => {
        this.iterations++;
        const n = (this.counts.get(t.runId) ?? 0) + 1;
        this.counts.set(t.runId, n);
        if (n === this.ctx.iterations) this.waiters.get(t.runId)?.();
      },
    });
  }

  async run(): Promise<void> {
    const { id } = (await postJson(`${this.proc!.apiUrl}/v1/runs`, this.body, this.agent)) as { id: string };
    if (this.counts.get(id) !== this.ctx.iterations) await new Promise<void>((r) => this.waiters.set(id, r));
    this.waiters.delete(id);
    this.counts.delete(id);
  }

  async close(): Promise<void> {
    this.agent.destroy();
    await this.proc?.stop();
  }
}

export interface CoreFigures {
  provider: Provider;
  raw: { loaded: Measured; sequential: Measured };
  /** The raw loop plus SPEC's durability round trips alone (durable-floor-loop.ts). */
  floor: { loaded: Measured; sequential: Measured };
  product: { loaded: Measured; sequential: Measured };
  /** Each round's CPU per iteration at 50 runs, product ÷ raw: how far one round's ratio is from another's. */
  roundRatios: number[];
}

const sum = (a: Measured, b: Measured): Measured => ({
  iterations: a.iterations + b.iterations, seconds: a.seconds + b.seconds, cpuMs: a.cpuMs + b.cpuMs, mainThreadMs: a.mainThreadMs + b.mainThreadMs, systemMs: a.systemMs + b.systemMs, commands: a.commands + b.commands,
  redisBytes: { in: a.redisBytes.in + b.redisBytes.in, out: a.redisBytes.out + b.redisBytes.out },
});
const ZERO: Measured = { iterations: 0, seconds: 0, cpuMs: 0, mainThreadMs: 0, systemMs: 0, commands: 0, redisBytes: { in: 0, out: 0 } };

/**
 * The raw loop and the product in this process, both started and warmed up before either is measured (so neither
 * gets the JIT work of the code they share); then rounds of measurements, one workload at a time, the order
 * alternating (drift on a shared machine cancels out), summed over the rounds. The loop not being measured sits
 * idle meanwhile (a few Redis commands and < 3 ms of CPU a second).
 */
export async function coreFigures(ctx: CoreContext, provider: Provider): Promise<CoreFigures> {
  const tools = [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' } }];
  const raw = new RawAgentLoop(ctx.bull, `bench-core-raw-${provider}`, await rawModel(RAW_API[provider], ctx.mockUrl, MODELS[provider].name, tools), ctx.prior, ctx.concurrency);
  const floor = new DurableFloorLoop(ctx.bull, `bench-core-floor-${provider}`, await rawModel(RAW_API[provider], ctx.mockUrl, MODELS[provider].name, tools), ctx.prior, ctx.concurrency);
  const product = new ProductLoop(ctx, `bench-core-${provider}`, provider);
  const out: CoreFigures = { provider, raw: { loaded: ZERO, sequential: ZERO }, floor: { loaded: ZERO, sequential: ZERO }, product: { loaded: ZERO, sequential: ZERO }, roundRatios: [] };
  try {
    await raw.start();
    await floor.start();
    await product.start();
    const loops = [['raw', raw, `raw loop (${provider})`], ['floor', floor, `durable floor (${provider})`], ['product', product, `agentloop (${provider})`]] as const;
    for (const [, loop, name] of loops) await lanes(loop, CORE.warmup, CORE.parallel, `${name} warm-up`);
    for (let r = 0; r < CORE.rounds; r++) {
      const perIteration: Partial<Record<'raw' | 'floor' | 'product', number>> = {};
      for (const [key, loop, name] of r % 2 ? [...loops].reverse() : loops) {
        const loaded = await measured(ctx.admin, loop, CORE.runs, CORE.parallel, name);
        perIteration[key] = loaded.cpuMs / loaded.iterations;
        out[key].loaded = sum(out[key].loaded, loaded);
        out[key].sequential = sum(out[key].sequential, await measured(ctx.admin, loop, CORE.sequential, 1, `${name} one at a time`));
      }
      out.roundRatios.push(perIteration.product! / perIteration.raw!);
    }
    return out;
  } finally {
    await product.close();
    await floor.close();
    await raw.close();
  }
}

const perIt = (m: Measured, v: number) => v / m.iterations;
const f2 = (n: number) => n.toFixed(2);
const kb = (m: Measured, bytes: number) => (bytes / m.iterations / 1024).toFixed(1);

/** The figures of one provider, for the report. */
export function coreLines(c: CoreFigures): string[] {
  const row = (name: string, m: { loaded: Measured; sequential: Measured }) =>
    `  ${name.padEnd(10)} ${(m.loaded.iterations / m.loaded.seconds).toFixed(0).padStart(12)} ${f2(perIt(m.loaded, m.loaded.cpuMs)).padStart(14)} ${perIt(m.loaded, m.loaded.commands).toFixed(1).padStart(17)} ${perIt(m.sequential, m.sequential.commands).toFixed(1).padStart(16)} ${f2(perIt(m.sequential, m.sequential.cpuMs)).padStart(14)}`;
  return [
    `core figures via ${c.provider} (raw loop: ${RAW_API[c.provider]} API through its SDK; ${c.product.loaded.iterations} iterations at ${CORE.parallel} runs in flight, ${c.product.sequential.iterations} one run at a time, in ${CORE.rounds} alternating rounds; ${CORE.warmup} warm-up runs each):`,
    `  ${''.padEnd(10)} ${'iterations/s'.padStart(12)} ${'CPU ms / iter'.padStart(14)} ${'Redis cmds / iter'.padStart(17)} ${'cmds / iter, 1×'.padStart(16)} ${'CPU ms, 1×'.padStart(14)}`,
    row('raw', c.raw),
    row('floor', c.floor),
    row('agentloop', c.product),
    `  the durable floor (the raw loop plus SPEC's round trips alone) ÷ raw: CPU ${f2(perIt(c.floor.loaded, c.floor.loaded.cpuMs) / perIt(c.raw.loaded, c.raw.loaded.cpuMs))}×, iterations/s ${f2(c.floor.loaded.iterations / c.floor.loaded.seconds / (c.raw.loaded.iterations / c.raw.loaded.seconds))}×; agentloop ÷ floor: CPU ${f2(perIt(c.product.loaded, c.product.loaded.cpuMs) / perIt(c.floor.loaded, c.floor.loaded.cpuMs))}×, iterations/s ${f2(c.product.loaded.iterations / c.product.loaded.seconds / (c.floor.loaded.iterations / c.floor.loaded.seconds))}×`,
    `  Redis traffic per iteration at ${CORE.parallel} runs, to Redis / from Redis: ${(['raw', 'floor', 'product'] as const).map((k) => `${k} ${kb(c[k].loaded, c[k].loaded.redisBytes.in)} / ${kb(c[k].loaded, c[k].loaded.redisBytes.out)} KB`).join(', ')}`,
    `  CPU / iteration at ${CORE.parallel} runs, agentloop ÷ raw, round by round: ${c.roundRatios.map((r) => `${f2(r)}×`).join(', ')}`,
    `  CPU ms / iter at ${CORE.parallel} runs on the main thread / on other threads (GC helpers, libuv): raw ${f2(perIt(c.raw.loaded, c.raw.loaded.mainThreadMs))} / ${f2(perIt(c.raw.loaded, c.raw.loaded.cpuMs - c.raw.loaded.mainThreadMs))}, agentloop ${f2(perIt(c.product.loaded, c.product.loaded.mainThreadMs))} / ${f2(perIt(c.product.loaded, c.product.loaded.cpuMs - c.product.loaded.mainThreadMs))}; in the kernel (all threads): raw ${f2(perIt(c.raw.loaded, c.raw.loaded.systemMs))}, agentloop ${f2(perIt(c.product.loaded, c.product.loaded.systemMs))}`,
    ...(c.raw.loaded.iterations !== c.product.loaded.iterations || c.raw.sequential.iterations !== c.product.sequential.iterations
      ? [`  (!) the raw loop made ${c.raw.loaded.iterations} + ${c.raw.sequential.iterations} iterations, agentloop ${c.product.loaded.iterations} + ${c.product.sequential.iterations}: not the same workload`]
      : []),
  ];
}

/** The targets of issue 11 on these figures, met or MISSED. */
export function coreTargetLines(c: CoreFigures): string[] {
  const { raw, product } = c;
  const cpu = perIt(product.loaded, product.loaded.cpuMs) / perIt(raw.loaded, raw.loaded.cpuMs);
  const tput = product.loaded.iterations / product.loaded.seconds / (raw.loaded.iterations / raw.loaded.seconds);
  const cmdSeq = perIt(product.sequential, product.sequential.commands) / perIt(raw.sequential, raw.sequential.commands);
  const cmdLoaded = perIt(product.loaded, product.loaded.commands) / perIt(raw.loaded, raw.loaded.commands);
  const line = (what: string, v: number, target: string, met: boolean) => `  ${what.padEnd(52)} ${f2(v)}×  (target ${target})  ${met ? 'met' : 'MISSED'}`;
  return [
    line(`CPU / iteration at ${CORE.parallel} runs vs raw loop (${c.provider})`, cpu, '≤ 1.1×', cpu <= 1.1),
    line(`iterations/s at ${CORE.parallel} runs vs raw loop (${c.provider})`, tput, '≥ 0.9×', tput >= 0.9),
    line(`Redis commands / iteration, one run at a time (${c.provider})`, cmdSeq, '≤ 1.2×', cmdSeq <= 1.2),
    line(`Redis commands / iteration at ${CORE.parallel} runs (${c.provider})`, cmdLoaded, '≤ 1.2×', cmdLoaded <= 1.2),
  ];
}
