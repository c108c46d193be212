import type { Redis } from 'ioredis';
import { serve } from '@agentloop/cli/serve';
import { productEnv, type LoopEnv } from './product-loop.js';
import { MODELS } from './providers.js';
import { ms } from './stats.js';

export interface FairnessFigure {
  /** Tenant a's runs queued when tenant b's run was created. */
  backlog: number;
  /** From b's create request to the start of its first iteration. */
  waitMs: number;
  /** First iterations of tenant a that started after b's run was created and before its own. */
  startedAhead: number;
}

/**
 * Fair scheduling (SPEC §2): tenant a has `backlog` runs queued (created while no orchestrator ran, so the backlog is
 * exactly that whatever the machine's speed); then the orchestrator starts and tenant b creates one run. Measured per
 * backlog: b's wait for its first iteration and how many of a's runs started ahead of it — flat when scheduling is
 * fair, growing with the backlog in queue order. a's runs are the bench's usual 5 iterations with a tool call each,
 * so b's first iteration also competes with the iterations of a's runs already started.
 */
export async function fairnessBench(
  ctx: Pick<LoopEnv, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency' | 'iterations'>,
  admin: Redis,
  backlogs: number[],
): Promise<FairnessFigure[]> {
  const out: FairnessFigure[] = [];
  const body = (tenant: string) =>
    JSON.stringify({
      input: `${tenant}: call the tool a few times, then answer`,
      model: MODELS.openai,
      tools: ['noop'],
      limits: { maxIterations: ctx.iterations + 1 },
    });
  for (const backlog of backlogs) {
    const prefix = `bench-fair-${backlog}`;
    const env = {
      ...productEnv(ctx, prefix),
      AGENTLOOP_AUTH: 'required',
      AGENTLOOP_API_KEYS: 'ka=a,kb=b',
      AGENTLOOP_METRICS_PORT: '0',
    };
    const api = await serve({ roles: ['api'], env });
    const create = async (tenant: 'a' | 'b') => {
      const res = await fetch(`${api.apiUrl}/v1/runs`, {
        method: 'POST',
        headers: { authorization: `Bearer k${tenant}`, 'content-type': 'application/json' },
        body: body(tenant),
      });
      if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string };
    };
    const firstStarts: Array<{ runId: string; at: number }> = [];
    let workers: Awaited<ReturnType<typeof serve>> | null = null;
    try {
      for (let i = 0; i < backlog; i += 50)
        await Promise.all(Array.from({ length: Math.min(50, backlog - i) }, () => create('a')));
      let bStarted: () => void = () => undefined;
      const started = new Promise<void>((r) => (bStarted = r));
      let bId = '';
      workers = await serve({
        roles: ['orchestrator', 'tool-runner', 'compressor'],
        env,
        onIterationTimed: (t) => {
          if (t.iteration !== 1) return;
          firstStarts.push({ runId: t.runId, at: t.startedAt });
          if (t.runId === bId) bStarted();
        },
      });
      const t0 = performance.now();
      bId = (await create('b')).id;
      if (!firstStarts.some((s) => s.runId === bId)) await started;
      const b = firstStarts.find((s) => s.runId === bId)!;
      out.push({
        backlog,
        waitMs: b.at - t0,
        startedAhead: firstStarts.filter((s) => s.runId !== bId && s.at >= t0 && s.at < b.at).length,
      });
    } finally {
      await workers?.stop();
      await api.stop();
      await admin.eval(
        `for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('UNLINK', k) end`,
        0,
        `${prefix}*`,
      );
    }
  }
  return out;
}

export const fairLines = (fair: FairnessFigure[]) =>
  fair.map(
    (f) =>
      `fair scheduling: tenant b's new run started its first iteration ${ms(f.waitMs / 1000)} after its create, with ${f.backlog} runs of tenant a queued (${f.startedAhead} of a's started after b's create and before it)`,
  );
export const fairTarget = (fair: FairnessFigure[]) => {
  const [small, big] = [fair[0]!, fair[fair.length - 1]!];
  const ratio = big.waitMs / small.waitMs;
  return `  fair scheduling, b's wait with ${big.backlog} vs ${small.backlog} of a's runs queued  ${ratio.toFixed(2)}×, a's runs started ahead of b's ${small.startedAhead} → ${big.startedAhead}  (target: flat)  ${big.startedAhead < small.backlog ? 'met' : 'MISSED'}`;
};
