import type { Redis } from 'ioredis';
import { serve } from '@agentloop/cli/serve';
import { priorConversation, productEnv, type LoopEnv } from './product-loop.js';
import { MODELS, type Provider } from './providers.js';
import { commandCount, ms, percentile } from './stats.js';

export interface Workload {
  runs: number;
  /** Runs in flight at once (the rest wait for a slot). */
  parallel: number;
}

type WorkloadEnv = Pick<LoopEnv, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency' | 'iterations'>;

async function agentloopWorkload(
  ctx: WorkloadEnv,
  admin: Redis,
  label: string,
  input: unknown,
  w: Workload,
  provider: Provider = 'openai',
) {
  const { redisUrl, mockUrl, iterations } = ctx;
  const overhead: number[] = [];
  const model: number[] = [];
  const starts = new Map<string, number[]>();
  const prefix = `bench-${provider}-${label}`;
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: productEnv({ redisUrl, mockUrl, toolsModule: ctx.toolsModule, concurrency: ctx.concurrency }, prefix),
    onIterationTimed: (t) => {
      overhead.push(t.overheadSeconds);
      model.push(t.modelSeconds);
      (starts.get(t.runId) ?? starts.set(t.runId, []).get(t.runId)!).push(t.startedAt);
    },
  });
  const body = JSON.stringify({
    input,
    model: MODELS[provider],
    tools: ['noop'],
    limits: { maxIterations: iterations + 1 },
  });
  await admin.config('RESETSTAT');
  const t0 = performance.now();
  const ids: string[] = [];
  const finished = () => overhead.length;
  await Promise.all(
    Array.from({ length: w.parallel }, async (_, lane) => {
      for (let i = lane; i < w.runs; i += w.parallel) {
        const before = finished();
        const r = await fetch(`${proc.apiUrl}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        ids.push(((await r.json()) as { id: string }).id);
        if (w.parallel === 1) while (finished() < before + iterations) await new Promise((res) => setTimeout(res, 2));
      }
    }),
  );
  while (finished() < w.runs * iterations) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - t0) / 1000;
  const commands = await commandCount(admin);
  const statuses = await Promise.all(
    ids
      .slice(0, 20)
      .map(async (id) => ((await (await fetch(`${proc.apiUrl}/v1/runs/${id}`)).json()) as { status: string }).status),
  );
  await proc.stop();
  const perIteration: number[] = [];
  for (const s of starts.values()) for (let i = 1; i < s.length; i++) perIteration.push((s[i]! - s[i - 1]!) / 1000);
  return { seconds, overhead, model, perIteration, commands, statuses };
}

type Result = Awaited<ReturnType<typeof agentloopWorkload>>;
export interface ProviderWorkloads {
  provider: Provider;
  small: Result;
  large: Result;
  quiet: Result;
}

/**
 * The product's own workloads, per provider adapter, every role in one process: `loaded` runs with a 10-message and
 * with a 200-message transcript, then 40 runs one at a time; printed as they finish (Redis commands per iteration
 * against the raw BullMQ loop's `rawPerIter`), side by side when there is more than one provider.
 */
export async function productWorkloads(
  ctx: WorkloadEnv,
  admin: Redis,
  providers: Provider[],
  loaded: Workload,
  rawPerIter: number,
): Promise<ProviderWorkloads[]> {
  const iters = loaded.runs * ctx.iterations;
  const row = (name: string, w: Result) => {
    const perIt = w.commands / iters;
    return [
      `${name}:`,
      `  iterations/s                 ${(iters / w.seconds).toFixed(0)}  (${iters} iterations in ${w.seconds.toFixed(2)} s; sample statuses: ${[...new Set(w.statuses)].join(',')})`,
      `  overhead per iteration       p50 ${ms(percentile(w.overhead, 50))}  p99 ${ms(percentile(w.overhead, 99))}  (in the iteration job, outside the model call)`,
      `  model call (mock, HTTP+SDK)  p50 ${ms(percentile(w.model, 50))}`,
      `  iteration wall time          p50 ${ms(percentile(w.perIteration, 50))}  p99 ${ms(percentile(w.perIteration, 99))}  (job start to next job start, model and tool included)`,
      `  Redis commands / iteration   ${perIt.toFixed(1)}  (${(perIt / rawPerIter).toFixed(2)}× the raw BullMQ loop; run creation and the event log included)`,
    ].join('\n');
  };
  const core: ProviderWorkloads[] = [];
  for (const provider of providers) {
    const small = await agentloopWorkload(ctx, admin, 'msgs10', priorConversation(10), loaded, provider);
    const large = await agentloopWorkload(ctx, admin, 'msgs200', priorConversation(200), loaded, provider);
    const quiet = await agentloopWorkload(
      ctx,
      admin,
      'quiet',
      priorConversation(10),
      { runs: 40, parallel: 1 },
      provider,
    );
    const adapter = `${provider} (${MODELS[provider].provider}/${MODELS[provider].name})`;
    console.log(row(`agentloop via ${adapter}, 10-message transcript`, small));
    console.log(row(`agentloop via ${adapter}, 200-message transcript`, large));
    console.log(
      `agentloop via ${adapter}, one run at a time (latency, 40 runs):\n  overhead per iteration       p50 ${ms(percentile(quiet.overhead, 50))}  p99 ${ms(percentile(quiet.overhead, 99))}\n  model call (mock, HTTP+SDK)  p50 ${ms(percentile(quiet.model, 50))}\n  iteration wall time          p50 ${ms(percentile(quiet.perIteration, 50))}  (model and tool included)\n`,
    );
    core.push({ provider, small, large, quiet });
  }
  if (core.length > 1) {
    console.log('per-iteration overhead side by side (p50, outside the model call):');
    console.log(
      `  ${'provider'.padEnd(10)} ${'one at a time'.padStart(14)} ${'200 runs'.padStart(10)} ${'200 msgs'.padStart(10)} ${'model call'.padStart(11)}`,
    );
    for (const c of core)
      console.log(
        `  ${c.provider.padEnd(10)} ${ms(percentile(c.quiet.overhead, 50)).padStart(14)} ${ms(percentile(c.small.overhead, 50)).padStart(10)} ${ms(percentile(c.large.overhead, 50)).padStart(10)} ${ms(percentile(c.quiet.model, 50)).padStart(11)}`,
      );
  }
  return core;
}
