import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId } from '@agentloop/protocol';
import { RetentionSweeper, RunStore } from '@agentloop/runtime';
import { serve } from '@agentloop/cli/serve';
import { percentile } from './stats.js';

/** Every key whose name contains the run id (SCAN), and their MEMORY USAGE summed (exact: SAMPLES 0). */
export async function runMemory(redis: Redis, prefix: string, runId: string): Promise<{ keys: number; bytes: number }> {
  let cursor = '0';
  let keys = 0;
  let bytes = 0;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${prefix}*${runId}*`, 'COUNT', 5000);
    for (const k of batch) {
      keys++;
      bytes += Number((await redis.call('MEMORY', 'USAGE', k, 'SAMPLES', '0')) ?? 0);
    }
    cursor = next;
  } while (cursor !== '0');
  return { keys, bytes };
}

/**
 * Redis memory per finished run (5 iterations, one tool call each but the last), measured over every key of the run;
 * then the same runs after their retention: nothing left.
 */
export async function runMemoryBench(
  redisUrl: string,
  admin: Redis,
  mockUrl: string,
  toolsModule: string,
  iterations: number,
) {
  const prefix = `bench-mem`;
  const retentionS = 3;
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      AGENTLOOP_PREFIX: prefix,
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      AGENTLOOP_AUTH: 'disabled',
      AGENTLOOP_TOOL_MODULES: toolsModule,
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: `${mockUrl}/v1`,
      LOG_LEVEL: 'error',
      AGENTLOOP_RUN_RETENTION_S: String(retentionS),
    },
  });
  try {
    const body = JSON.stringify({
      input: 'Call the tool a few times, then answer.',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['noop'],
      limits: { maxIterations: iterations + 1 },
    });
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
    const finishedAt = Date.now();
    const snaps = await Promise.all(ids.map((id) => waitEnded(proc.apiUrl!, id)));
    const used = await Promise.all(ids.map((id) => runMemory(admin, prefix, id)));
    await new Promise((r) => setTimeout(r, Math.max(0, finishedAt + retentionS * 1000 + 1500 - Date.now())));
    await new RetentionSweeper(admin, prefix).sweep();
    const after = await Promise.all(ids.map((id) => runMemory(admin, prefix, id)));
    return {
      iterations: snaps[0]!.iteration,
      status: [...new Set(snaps.map((s) => s.status))].join(','),
      keysPerRun: percentile(
        used.map((u) => u.keys),
        50,
      ),
      bytesPerRun: percentile(
        used.map((u) => u.bytes),
        50,
      ),
      bytesAfterRetention: after.reduce((n, u) => n + u.bytes, 0),
      keysAfterRetention: after.reduce((n, u) => n + u.keys, 0),
    };
  } finally {
    await proc.stop();
  }
}

async function waitEnded(apiUrl: string, id: string): Promise<{ status: string; iteration: number }> {
  for (;;) {
    const s = (await (await fetch(`${apiUrl}/v1/runs/${id}`)).json()) as { status: string; iteration: number };
    if (['completed', 'failed', 'cancelled'].includes(s.status)) return s;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Redis commands the api runs for one request of a tenant with a request rate, beyond the same request without. */
export async function tenantLimitCost(redisUrl: string, admin: Redis) {
  const prefix = 'bench-limits';
  const proc = await serve({
    roles: ['api'],
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      AGENTLOOP_PREFIX: prefix,
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      LOG_LEVEL: 'error',
      AGENTLOOP_API_KEYS: 'limited=limited,free=free',
      AGENTLOOP_TENANT_LIMITS: JSON.stringify({ limited: { requestsPerSecond: 1_000_000, burst: 1_000_000 } }),
    },
  });
  const n = 500;
  const measure = async (key: string) => {
    await fetch(`${proc.apiUrl}/v1/runs/none`, { headers: { authorization: `Bearer ${key}` } }); // warm (script loaded)
    const before = await topLevel(admin);
    for (let i = 0; i < n; i++)
      await fetch(`${proc.apiUrl}/v1/runs/none`, { headers: { authorization: `Bearer ${key}` } });
    const after = await topLevel(admin);
    return (after - before) / n;
  };
  try {
    const free = await measure('free');
    const limited = await measure('limited');
    return { free, limited, extra: limited - free };
  } finally {
    await proc.stop();
  }
}

/**
 * Round trips of that request: the commands a client sends for it (EVALSHA of the bucket script, HGETALL of the run),
 * from INFO commandstats — which also counts what scripts run inside, so only those two are summed.
 */
async function topLevel(admin: Redis): Promise<number> {
  const info = await admin.info('commandstats');
  let total = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm))
    if (m[1] === 'evalsha' || m[1] === 'hgetall') total += Number(m[2]);
  return total;
}

/**
 * Listing latency (GET /v1/runs, unfiltered and ?status=queued) with `history` finished runs in the tenant's
 * history besides 60 queued ones: keyset paging and per-status indexes make it independent of the history.
 */
export async function listingBench(redisUrl: string, admin: Redis, histories: number[]) {
  const out: Array<{ history: number; all: number; queued: number }> = [];
  for (const history of histories) {
    const prefix = `bench-list-${history}`;
    const store = new RunStore(admin, prefix);
    const request = RunRequestSchema.parse({ input: 'x', model: { provider: 'openai', name: 'gpt-4o-mini' } });
    const make = (invalid: boolean) =>
      store.create({
        runId: newRunId(),
        tenant: 't',
        request,
        messages: [{ role: 'user', content: 'x' }],
        bodyHash: 'h',
        ...(invalid ? { invalid: { error: { code: 'invalid_request', message: 'bench' } } } : {}),
      });
    for (let i = 0; i < history; i += 1000)
      await Promise.all(Array.from({ length: Math.min(1000, history - i) }, () => make(true)));
    for (let i = 0; i < 60; i++) await make(false);
    const proc = await serve({
      roles: ['api'],
      env: {
        ...process.env,
        REDIS_URL: redisUrl,
        AGENTLOOP_PREFIX: prefix,
        AGENTLOOP_PORT: '0',
        AGENTLOOP_HOST: '127.0.0.1',
        LOG_LEVEL: 'error',
        AGENTLOOP_API_KEYS: 'k=t',
      },
    });
    const time = async (path: string) => {
      const samples: number[] = [];
      for (let i = 0; i < 220; i++) {
        const t0 = performance.now();
        const r = await fetch(`${proc.apiUrl}${path}`, { headers: { authorization: 'Bearer k' } });
        await r.arrayBuffer();
        if (i >= 20) samples.push((performance.now() - t0) / 1000);
      }
      return percentile(samples, 50);
    };
    try {
      out.push({
        history,
        all: await time('/v1/runs?limit=50'),
        queued: await time('/v1/runs?status=queued&limit=50'),
      });
    } finally {
      await proc.stop();
      await admin.eval(
        `for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('UNLINK', k) end`,
        0,
        `${prefix}*`,
      );
    }
  }
  return out;
}
