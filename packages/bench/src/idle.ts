import { serve } from '@agentloop/cli/serve';

/** ms of CPU (user + system, every thread of this process) per second over the next `ms`. */
async function cpuPerSecond(ms: number): Promise<number> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / ((performance.now() - t0) / 1000);
}

/**
 * CPU an idle product uses, all roles in one process, after a load: 20 runs of `iterations` iterations, then 10 s of
 * nothing (process.cpuUsage over the window, ms of CPU per second: `afterLoad`), then the next 10 s (`steady`: by
 * then V8's memory reducer, which compacts the heap a few seconds after a load, has run); then the same load again in
 * the same process and the 10 s after it (`afterSecondLoad`: whether the first window's cost comes back after every
 * load, or was the one-off compaction of the heap the process grew while it started and took its first load).
 */
export async function idleCpuAfterLoad(
  redisUrl: string,
  mockUrl: string,
  toolsModule: string,
  iterations: number,
): Promise<IdleFigures> {
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      AGENTLOOP_PREFIX: 'bench-idle',
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      AGENTLOOP_AUTH: 'disabled',
      AGENTLOOP_TOOL_MODULES: toolsModule,
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: `${mockUrl}/v1`,
      LOG_LEVEL: 'error',
    },
  });
  try {
    const body = JSON.stringify({
      input: 'load',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['noop'],
      limits: { maxIterations: iterations + 1 },
    });
    const load = async () => {
      const ids = await Promise.all(
        Array.from(
          { length: 20 },
          async () =>
            (
              (await (
                await fetch(`${proc.apiUrl}/v1/runs`, {
                  method: 'POST',
                  headers: { 'content-type': 'application/json' },
                  body,
                })
              ).json()) as { id: string }
            ).id,
        ),
      );
      for (const id of ids)
        while (
          !['completed', 'failed', 'cancelled'].includes(
            ((await (await fetch(`${proc.apiUrl}/v1/runs/${id}`)).json()) as { status: string }).status,
          )
        )
          await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 2000));
    };
    await load();
    const afterLoad = await cpuPerSecond(10_000);
    const steady = await cpuPerSecond(10_000);
    await load();
    return { afterLoad, steady, afterSecondLoad: await cpuPerSecond(10_000) };
  } finally {
    await proc.stop();
  }
}

export interface IdleFigures {
  /** ms of CPU per second over the 10 s after the first load of a fresh process. */
  afterLoad: number;
  /** The 10 s after those. */
  steady: number;
  /** The 10 s after a second, equal load in the same process. */
  afterSecondLoad: number;
}

export const idleLine = (i: IdleFigures) =>
  `CPU of an idle product after a load (all roles, one process): ${i.afterLoad.toFixed(2)} ms per second over the first 10 s, ${i.steady.toFixed(2)} over the next 10 s; ${i.afterSecondLoad.toFixed(2)} over the 10 s after a second load`;
export const idleTarget = (i: IdleFigures) =>
  `  idle CPU after a load                  ${i.afterLoad.toFixed(2)} ms/s  (target < 2 ms/s)  ${i.afterLoad < 2 ? 'met' : 'MISSED'}; the next 10 s ${i.steady.toFixed(2)} ms/s; after a second load ${i.afterSecondLoad.toFixed(2)} ms/s`;
