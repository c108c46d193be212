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
 * then V8's memory reducer, which compacts the heap a few seconds after a load, has run).
 */
export async function idleCpuAfterLoad(redisUrl: string, mockUrl: string, toolsModule: string, iterations: number): Promise<{ afterLoad: number; steady: number }> {
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: {
      ...process.env, REDIS_URL: redisUrl, AGENTLOOP_PREFIX: 'bench-idle', AGENTLOOP_PORT: '0', AGENTLOOP_HOST: '127.0.0.1', AGENTLOOP_AUTH: 'disabled',
      AGENTLOOP_TOOL_MODULES: toolsModule, OPENAI_API_KEY: 'sk-bench', OPENAI_BASE_URL: `${mockUrl}/v1`, LOG_LEVEL: 'error',
    },
  });
  try {
    const body = JSON.stringify({ input: 'load', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['noop'], limits: { maxIterations: iterations + 1 } });
    const ids = await Promise.all(Array.from({ length: 20 }, async () => ((await (await fetch(`${proc.apiUrl}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).json()) as { id: string }).id));
    for (const id of ids)
      while (!['completed', 'failed', 'cancelled'].includes(((await (await fetch(`${proc.apiUrl}/v1/runs/${id}`)).json()) as { status: string }).status)) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 2000));
    const afterLoad = await cpuPerSecond(10_000);
    return { afterLoad, steady: await cpuPerSecond(10_000) };
  } finally {
    await proc.stop();
  }
}
