import type { Redis } from 'ioredis';
import { serve } from '@agentloop/cli/serve';
import { productEnv, type LoopEnv } from './product-loop.js';
import { startMockProcess } from './processes.js';
import { MODELS } from './providers.js';

/** Model calls per run of tenant a here: long enough that its running runs stay running while b's run is measured. */
const LONG_RUN = 40;

export interface LoadedFairnessFigure {
  /** Tenant a's runs running and queued when b created its run (read just before). */
  running: number;
  queued: number;
  /** b's wait on the same deployment before tenant a created anything. */
  idleWaitMs: number;
  /** From b's create request to the start of its first iteration, with a's runs running and queued. */
  waitMs: number;
  /** From the create's answer (b's job is queued) to the start of its first iteration; and the same while idle. */
  queueWaitMs: number;
  idleQueueWaitMs: number;
  /** Iterations of tenant a (any: first or later) that started after b's job was queued and before b's first. */
  aheadOfB: number;
}

/**
 * Fair scheduling under a running backlog (SPEC §2): tenant a has `running` runs in progress (40 model calls each,
 * a `noop` call per call) and `queued` more waiting; tenant b creates one run. The running runs' continuations
 * compete with b's first iteration on every orchestrator slot: in a build that ranked first iterations only,
 * every continuation went first. Compared with b's wait on the same deployment while idle.
 */
export async function loadedFairnessBench(
  ctx: Pick<LoopEnv, 'redisUrl' | 'toolsModule' | 'concurrency'>,
  admin: Redis,
  running: number,
  queued: number,
): Promise<LoadedFairnessFigure> {
  const mock = await startMockProcess(['tool-loop', String(LONG_RUN)]);
  const prefix = `bench-fair-loaded`;
  // tool-runners with room for every running run's call: the orchestrators' slots are what a and b compete for
  const env = {
    ...productEnv({ ...ctx, mockUrl: mock.url, concurrency: { ...ctx.concurrency, tools: 200 } }, prefix),
    AGENTLOOP_AUTH: 'required',
    AGENTLOOP_API_KEYS: 'ka=a,kb=b',
    AGENTLOOP_METRICS_PORT: '0',
    AGENTLOOP_DRAIN_MS: '2000',
  };
  const body = (tenant: string) =>
    JSON.stringify({
      input: `${tenant}: call the tool, then answer`,
      model: MODELS.openai,
      tools: ['noop'],
      limits: { maxIterations: LONG_RUN + 1 },
    });
  const starts: Array<{ runId: string; iteration: number; at: number }> = [];
  let bId = '';
  let bStarted: () => void = () => undefined;
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env,
    onIterationTimed: (t) => {
      starts.push({ runId: t.runId, iteration: t.iteration, at: t.startedAt });
      if (t.iteration === 1 && t.runId === bId) bStarted();
    },
  });
  const create = async (tenant: 'a' | 'b') => {
    const res = await fetch(`${proc.apiUrl}/v1/runs`, {
      method: 'POST',
      headers: { authorization: `Bearer k${tenant}`, 'content-type': 'application/json' },
      body: body(tenant),
    });
    if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const firstOf = (id: string) => starts.find((s) => s.runId === id && s.iteration === 1);
  /** b creates a run; its wait for its first iteration and the iterations of a's runs that started meanwhile. */
  const measureB = async () => {
    const started = new Promise<void>((r) => (bStarted = r));
    const t0 = performance.now();
    bId = await create('b');
    const queuedAt = performance.now(); // its job is in the queue once the create is answered
    if (!firstOf(bId)) await started;
    const b = firstOf(bId)!;
    return {
      waitMs: b.at - t0,
      queueWaitMs: Math.max(0, b.at - queuedAt),
      aheadOfB: starts.filter((s) => s.runId !== bId && s.at >= queuedAt && s.at < b.at).length,
    };
  };
  const count = (status: string) => admin.zcard(`${prefix}:tenant:a:runs:${status}`);
  try {
    // idle: the median of three (the first also pays for the process's warm-up)
    const idles = [await measureB(), await measureB(), await measureB()].sort((x, y) => x.waitMs - y.waitMs);
    const idle = idles[1]!;
    for (let i = 0; i < running; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, running - i) }, () => create('a')));
    while ((await count('running')) < running) await new Promise((r) => setTimeout(r, 20));
    for (let i = 0; i < queued; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, queued - i) }, () => create('a')));
    const [nowRunning, nowQueued] = [await count('running'), await count('queued')];
    const loaded = await measureB();
    return {
      running: nowRunning,
      queued: nowQueued,
      idleWaitMs: idle.waitMs,
      idleQueueWaitMs: idle.queueWaitMs,
      ...loaded,
    };
  } finally {
    await proc.stop();
    mock.child.kill();
    await admin.eval(`for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('UNLINK', k) end`, 0, `${prefix}*`);
  }
}

export const loadedFairnessLines = (f: LoadedFairnessFigure) => [
  `fair scheduling under a running backlog: tenant b's new run started its first iteration ${f.waitMs.toFixed(1)} ms after its create request (${f.queueWaitMs.toFixed(1)} ms after its job was queued) with ${f.running} of a's runs running and ${f.queued} queued; ${f.aheadOfB} iterations of a's runs started between its job's queueing and its start; idle deployment: ${f.idleWaitMs.toFixed(1)} ms (${f.idleQueueWaitMs.toFixed(1)} ms)`,
];
/** The queue's part of the wait: the create request itself is slower on a loaded process (the api shares it here). */
export const loadedFairnessTarget = (f: LoadedFairnessFigure) =>
  `  fair scheduling, b's job queued → started under a's running backlog vs idle  ${(f.queueWaitMs / Math.max(1, f.idleQueueWaitMs)).toFixed(2)}×  (target ≤ 2×)  ${f.queueWaitMs <= 2 * Math.max(1, f.idleQueueWaitMs) ? 'met' : 'MISSED'}`;
