import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunSnapshot } from '@agentloop/protocol';
import type { ApiClient } from '../test-support/api-client.js';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

const BACKLOG = 300;
const run = (tenant: string, i: number) => ({
  input: `${tenant} ${i}`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
});

/** Every run of the tenant in one status, through the listing API (all pages). */
async function listAll(client: ApiClient, status: string): Promise<RunSnapshot[]> {
  const out: RunSnapshot[] = [];
  let cursor: string | null = '';
  while (cursor !== null) {
    const page: { json: { data: RunSnapshot[]; nextCursor: string | null } } = await client.request(
      'GET',
      `/v1/runs?status=${status}&limit=200&cursor=${cursor}`,
    );
    out.push(...page.json.data);
    cursor = page.json.nextCursor;
  }
  return out;
}

/**
 * SPEC §2 "Fair scheduling": tenant a has 300 runs ready when tenant b creates one; b's run does not wait for a's
 * backlog. The orchestrator starts once both are queued, so the backlog is there whatever the machine's speed: in
 * queue order (FIFO) b's run would be the 301st to start.
 */
describe('fair scheduling between tenants (api and orchestrator processes, mock model answering at once)', () => {
  let s: ProcessStack;
  beforeAll(async () => {
    s = await ProcessStack.start(['api'], {
      script: () => ({ text: 'done' }),
      env: { AGENTLOOP_ORCHESTRATOR_CONCURRENCY: '4' },
    });
  }, 60_000);
  afterAll(() => s?.stop());

  it("a tenant's new run completes before another tenant's backlog of 300 is half done; the backlog completes too", async () => {
    const a: string[] = [];
    for (let i = 0; i < BACKLOG; i += 25)
      a.push(
        ...(await Promise.all(
          Array.from({ length: Math.min(25, BACKLOG - i) }, (_, j) => s.a.startRun(run('a', i + j))),
        )),
      );
    const b = await s.b.startRun(run('b', 0));
    expect(await s.redis.zcard(`${s.keyPrefix}:tenant:tenant-a:runs:queued`)).toBe(BACKLOG);

    await s.spawn('orchestrator');
    const done = await s.b.waitTerminal(b, 60_000);
    expect(done.status).toBe('completed');
    await until(
      "tenant a's backlog",
      async () => (await s.redis.zcard(`${s.keyPrefix}:tenant:tenant-a:runs:completed`)) === BACKLOG,
      120_000,
    );

    // completion order on one clock (Redis time, recorded by the step that completes each run)
    const completedA = await listAll(s.a, 'completed');
    expect(completedA.map((r) => r.id).sort()).toEqual([...a].sort());
    const aBeforeB = completedA.filter((r) => Date.parse(r.updatedAt) < Date.parse(done.updatedAt)).length;
    expect(aBeforeB).toBeLessThan(BACKLOG / 2);
    // in fact b's run went in the first wave: it ranked first in its own tenant's line, as did a's first run only
    expect(aBeforeB).toBeLessThan(BACKLOG / 10);
  }, 180_000);
});
