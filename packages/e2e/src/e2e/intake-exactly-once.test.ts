import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES, RunRequestSchema, type EventEnvelope } from '@agentloop/protocol';
import { RunStore } from '@agentloop/runtime';
import { checkEvents } from '@agentloop/testing';
import { runIdForJob } from '@agentloop/orchestrator';
import { InProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

/** SPEC §2 queue intake: a requests job is applied once however often it is delivered; no run stays queued forever. */
describe('intake is exactly-once', () => {
  let s: InProcessStack;
  let queue: Queue;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: () => ({ text: 'ok' }), env: { AGENTLOOP_RECONCILE_MS: '500' } });
    queue = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
  }, 30_000);
  afterAll(async () => {
    await queue?.close();
    await s?.stop();
  });
  const request = { input: 'hello once', model: { provider: 'openai', name: 'gpt-4o-mini' } };
  /** Every requests job was taken and is done (none waiting, running or due for a retry): the redeliveries were applied. */
  const intakeDone = () =>
    until('the requests queue to be worked off', async () =>
      Object.values(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).every((n) => n === 0),
    );

  it('the same runId delivered twice (after the run finished, and racing) makes one run: one run.queued, the input once', async () => {
    const runId = `once_${Date.now()}`;
    await queue.add('run', { tenantId: 'tenant-a', runId, request });
    const first = await s.a.waitTerminal(runId);
    await queue.add('run', { tenantId: 'tenant-a', runId, request }); // a redelivery after the run ended
    await Promise.all([
      queue.add('run', { tenantId: 'tenant-a', runId, request }),
      queue.add('run', { tenantId: 'tenant-a', runId, request }),
    ]);
    await intakeDone();
    const snap = (await s.a.getRun(runId)).json;
    expect(snap.status).toBe('completed');
    expect(snap.updatedAt).toBe(first.updatedAt);
    const events = (await s.a.events(runId)).events as EventEnvelope[];
    expect(checkEvents(events)).toEqual([]);
    expect(events.filter((e) => e.type === 'run.queued')).toHaveLength(1);
    const history = (
      (await s.a.getRun(runId, 'history')).json as unknown as { history: Array<{ role: string; content: string }> }
    ).history;
    expect(history.filter((m) => m.content === 'hello once')).toHaveLength(1);
  });

  it('a run id of another tenant is refused, and that run is untouched', async () => {
    const runId = `mine_${Date.now()}`;
    await queue.add('run', { tenantId: 'tenant-a', runId, request });
    await s.a.waitTerminal(runId);
    const job = await queue.add('run', { tenantId: 'tenant-b', runId, request: { ...request, input: 'hijack' } });
    await expect.poll(async () => await job.getState(), { timeout: 10_000 }).toBe('failed');
    expect((await s.b.getRun(runId)).status).toBe(404);
    expect((await s.a.getRun(runId)).json.status).toBe('completed');
  });

  it('a job without a runId names its run after the job, so a redelivery finds the same run', () => {
    expect(runIdForJob('17')).toBe(runIdForJob('17'));
    expect(runIdForJob('17')).not.toBe(runIdForJob('18'));
    expect(runIdForJob('idem-tenant-a-some:key/with stuff')).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
  });

  it('an envelope with an invalid runId or idempotencyKey is not dropped silently: its run (named by the job) fails with the issues', async () => {
    for (const [field, value] of [
      ['runId', 'a/b'],
      ['idempotencyKey', 7],
      ['idempotencyKey', 'k'.repeat(300)],
    ] as const) {
      const jobId = `bad-envelope-${field}-${Date.now()}`;
      const job = await queue.add('run', { tenantId: 'tenant-a', request, [field]: value }, { jobId });
      const runId = runIdForJob(jobId);
      const snap = await s.a.waitTerminal(runId);
      expect(snap).toMatchObject({ status: 'failed', error: { code: 'invalid_request' } });
      expect(JSON.stringify(snap.error)).toContain(field);
      await until('the job to complete', async () => (await job.getState()) === 'completed');
      expect((await queue.getJob(jobId))!.returnvalue).toEqual({ id: runId });
    }
  });

  it('a job without a runId delivered again (same job id) makes one run', async () => {
    const jobId = `backend-msg-${Date.now()}`;
    const job = await queue.add('run', { tenantId: 'tenant-a', request }, { jobId });
    const runId = runIdForJob(jobId);
    await s.a.waitTerminal(runId);
    // the redelivery: a job with the same id after the first was removed (BullMQ dedupes while it exists)
    await job.remove().catch(() => undefined);
    expect(await queue.getJob(jobId)).toBeFalsy(); // so the add below is a new delivery, not deduplicated
    await queue.add('run', { tenantId: 'tenant-a', request }, { jobId });
    await intakeDone();
    const mine = (await s.a.request('GET', '/v1/runs?limit=200')).json.data.filter((r: { id: string }) =>
      r.id.startsWith('run_q'),
    );
    expect(mine.filter((r: { id: string }) => r.id === runId)).toHaveLength(1);
    expect((await s.a.events(runId)).events.filter((e) => e.type === 'run.queued')).toHaveLength(1);
  });

  it('a run created without its first job (its creator died) is queued again by the reconciler and completes', async () => {
    const store = new RunStore(s.redis, s.keyPrefix);
    const runId = `orphan_${Date.now()}`;
    const req = RunRequestSchema.parse(request);
    const created = await store.create({
      runId,
      tenant: 'tenant-a',
      request: req,
      messages: [{ role: 'user', content: 'hello once' }],
      bodyHash: 'x',
    });
    expect(created.created).toBe(true); // and no job: exactly what a crash right after the create leaves
    const snap = await s.a.waitTerminal(runId, 15_000);
    expect(snap.status).toBe('completed');
    expect(await s.redis.zscore(`${s.keyPrefix}:queued`, runId)).toBeNull();
  });
});
