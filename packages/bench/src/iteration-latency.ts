import { Redis } from 'ioredis';
import { RawAgentLoop } from './raw-agent-loop.js';
import { rawModel } from './raw-model-call.js';
import { MODELS, RAW_API, type Provider } from './providers.js';
import { lanes, type Loop } from './loop-window.js';
import { ms, percentile } from './stats.js';
import { ProductLoop, type LoopEnv } from './product-loop.js';

/** One iteration as a loop reports it: when its job started (performance.now(), ms) and how long its model call took. */
export interface IterationTiming {
  runId: string;
  iteration: number;
  startedAt: number;
  modelSeconds: number;
}

/**
 * Seconds each iteration took outside its model call: from its start to the next iteration's start in the same run,
 * minus its model call — the job hop, the tool hop and everything the loop does itself. A run's last iteration (no
 * next one) is not counted.
 */
export function outsideModel(timings: readonly IterationTiming[]): number[] {
  const byRun = new Map<string, IterationTiming[]>();
  for (const t of timings) (byRun.get(t.runId) ?? byRun.set(t.runId, []).get(t.runId)!).push(t);
  const out: number[] = [];
  for (const run of byRun.values()) {
    run.sort((a, b) => a.iteration - b.iteration);
    for (let i = 1; i < run.length; i++)
      out.push((run[i]!.startedAt - run[i - 1]!.startedAt) / 1000 - run[i - 1]!.modelSeconds);
  }
  return out;
}

/**
 * How the latency target's loops are driven: warmed up (200 runs, 50 in flight: a long-lived process's JIT), then
 * 40 runs one at a time, each iteration's time outside its model call recorded.
 */
export const LATENCY_RUNS = { runs: 40, warmup: 200, parallel: 50 };

type TimedLoop = Loop & { onIterationTimed?: (t: IterationTiming) => void };

async function outsideOf(loop: TimedLoop, name: string, o: typeof LATENCY_RUNS): Promise<number[]> {
  if (o.warmup) await lanes(loop, o.warmup, o.parallel, `${name} warm-up`);
  const timings: IterationTiming[] = [];
  loop.onIterationTimed = (t) => timings.push(t);
  await lanes(loop, o.runs, 1, `${name}, one run at a time`);
  loop.onIterationTimed = undefined;
  return outsideModel(timings);
}

/**
 * Both loops of the latency target on the same mock, the same tool (a no-op on the tool queue), the same transcript,
 * one after the other in this process: the raw BullMQ agent loop (raw-agent-loop.ts) and the product, every role in
 * one process (product-loop.ts).
 */
export async function latencyFigures(
  env: LoopEnv,
  provider: Provider,
  prefix: string,
  o = LATENCY_RUNS,
): Promise<{ raw: number[]; product: number[] }> {
  const bull = new Redis(env.redisUrl, { maxRetriesPerRequest: null });
  const tools = [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' } }];
  const raw = new RawAgentLoop(
    bull,
    `${prefix}-raw`,
    await rawModel(RAW_API[provider], env.mockUrl, MODELS[provider].name, tools),
    env.prior,
    env.concurrency,
  );
  let rawFigure: number[];
  try {
    await raw.start();
    rawFigure = await outsideOf(raw, 'raw loop', o);
  } finally {
    await raw.close();
    bull.disconnect();
  }
  const product = new ProductLoop(env, `${prefix}-product`, provider);
  try {
    await product.start();
    return { raw: rawFigure, product: await outsideOf(product, 'agentloop', o) };
  } finally {
    await product.close();
  }
}

/**
 * Issue 12's latency target, like with like (issue 21): one run at a time, an iteration's wall time outside the model
 * call, the product's against the raw loop's. Until 2026-12-03 the product's in-job overhead (no hop in it) was divided
 * by one raw job round trip (a hop and nothing else): two different quantities.
 */
export function likeForLikeLines({ product, raw }: { product: number[]; raw: number[] }): {
  lines: string[];
  target: string;
} {
  const [p, r] = [percentile(product, 50), percentile(raw, 50)];
  const ratio = p / r;
  return {
    lines: [
      `iteration wall time outside the model call, one run at a time (start to next start minus the model call: job hop, tool hop, the loop's own work):`,
      `  raw BullMQ agent loop  p50 ${ms(r)}  p99 ${ms(percentile(raw, 99))}  (${raw.length} iterations)`,
      `  agentloop              p50 ${ms(p)}  p99 ${ms(percentile(product, 99))}  (${product.length} iterations)`,
    ],
    target: `  iteration outside the model call, one run at a time, vs raw loop  ${ratio.toFixed(2)}×  (target ≤ 3×)  ${ratio <= 3 ? 'met' : 'MISSED'}`,
  };
}
