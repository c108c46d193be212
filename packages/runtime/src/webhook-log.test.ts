import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId, type NewEvent, type RunRequestInput } from '@agentloop/protocol';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { RunStore } from './run-store.js';

const started: NewEvent[] = [
  { type: 'run.started', data: {} },
  { type: 'iteration.started', data: { iteration: 1 } },
];

describe('webhook deliveries: written to the outbox by the step that appends the event, logged once, worked off in order', () => {
  let redis: Redis;
  let store: RunStore;
  const prefix = testPrefix('webhooks');
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
    store = new RunStore(redis, prefix, 60);
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const create = async (extra: Partial<RunRequestInput> = {}) => {
    const runId = newRunId();
    const request = RunRequestSchema.parse({
      input: 'hi',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      ...extra,
    });
    await store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h' });
    return runId;
  };
  const outbox = async (runId: string) =>
    (await redis.lrange(store.keys.outbox, 0, -1)).filter((e) => e.includes(`|${runId}`));
  const notify = (events?: string[]) =>
    ({ notify: { url: 'https://hooks.example/x', ...(events ? { events } : {}) } }) as Partial<RunRequestInput>;

  it('a run with notify: each listed event goes to the outbox in its own step, with its seq and type; others do not', async () => {
    const runId = await create(notify(['run.queued', 'run.started', 'run.completed']));
    expect(await outbox(runId)).toEqual([`W|${runId}|1|run.queued`]);
    await store.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: started,
    });
    await store.appendEvents(runId, 1, [{ type: 'message.delta', data: { iteration: 1, text: 'x' } }]);
    await store.finish(runId, {
      expectIteration: 1,
      status: 'completed',
      stopReason: 'final_answer',
      error: null,
      events: [
        {
          type: 'run.completed',
          data: { output: 'x', stopReason: 'final_answer', iterations: 1, usage: (await store.load(runId))!.usage },
        },
      ],
    });
    const events = await store.events(runId);
    const seqOf = (type: string) => events.find((e) => e.type === type)!.seq;
    expect(await outbox(runId)).toEqual([
      `W|${runId}|1|run.queued`,
      `W|${runId}|${seqOf('run.started')}|run.started`,
      `W|${runId}|${seqOf('run.completed')}|run.completed`,
    ]);
  });

  it('the default events; a run without notify writes nothing and stores no notify field', async () => {
    const withDefaults = await create(notify());
    const plain = await create();
    for (const runId of [withDefaults, plain]) {
      await store.startIteration(runId, {
        iteration: 1,
        expectPhase: 'queued',
        expectPendingFinal: '',
        callMode: 'tools',
        events: started,
      });
      await store.finish(runId, {
        expectIteration: 1,
        status: 'failed',
        stopReason: null,
        error: { code: 'x', message: 'y' },
        events: [{ type: 'run.failed', data: { error: { code: 'x', message: 'y' } } }],
      });
    }
    const failedSeq = (await store.events(withDefaults)).find((e) => e.type === 'run.failed')!.seq;
    expect(await outbox(withDefaults)).toEqual([`W|${withDefaults}|${failedSeq}|run.failed`]);
    expect(await outbox(plain)).toEqual([]);
    expect(await redis.hmget(store.keys.run(plain).state, 'wh', 'whUrl')).toEqual([null, null]);
    expect(await redis.hmget(store.keys.run(withDefaults).state, 'wh', 'whUrl')).toEqual([
      ',run.paused,run.completed,run.failed,run.cancelled,',
      'https://hooks.example/x',
    ]);
  });

  it('logs a delivery once however often it is relayed, one job generation at a time, oldest first', async () => {
    const runId = await create(notify());
    const log = store.webhooks;
    expect(await log.enqueue(runId, 5, 'run.paused')).toEqual({ kind: 'queued', gen: 1 });
    expect(await log.enqueue(runId, 5, 'run.paused')).toEqual({ kind: 'queued', gen: 1 }); // relayed again: the same delivery, the same job
    expect(await log.enqueue(runId, 9, 'run.completed')).toEqual({ kind: 'queued', gen: 1 });
    expect((await log.list(runId)).map((d) => [d.webhookId, d.type, d.status])).toEqual([
      [`msg_${runId}_5`, 'run.paused', 'pending'],
      [`msg_${runId}_9`, 'run.completed', 'pending'],
    ]);

    const first = await log.next(runId, 1);
    if (first.kind !== 'due') throw new Error(first.kind);
    expect(first).toMatchObject({ index: 1, record: { seq: 5 }, body: null });
    expect(await log.next(runId, 2)).toEqual({ kind: 'stale' }); // another generation's job does nothing
    expect(await log.saveBody(runId, 1, 1, 'body-1')).toBe('body-1');
    expect(await log.saveBody(runId, 1, 1, 'body-1b')).toBe('body-1'); // the first body is kept for every attempt
    const retry = {
      ...first.record,
      attempts: 1,
      lastStatusCode: 500,
      nextAttemptAt: Date.now() + 5000,
      firstAttemptAt: Date.now(),
    };
    expect(await log.recordAttempt(runId, 1, first, retry, false)).toBe(true);
    expect(await log.recordAttempt(runId, 1, first, retry, false)).toBe(false); // a second delivery of the job recording over the same read
    const again = await log.next(runId, 1);
    if (again.kind !== 'due') throw new Error(again.kind);
    expect(again).toMatchObject({ index: 1, body: 'body-1', record: { attempts: 1, lastStatusCode: 500 } }); // completed waits behind paused
    expect(
      await log.recordAttempt(
        runId,
        1,
        again,
        { ...again.record, status: 'delivered', attempts: 2, lastStatusCode: 204, nextAttemptAt: null },
        true,
      ),
    ).toBe(true);
    const second = await log.next(runId, 1);
    expect(second).toMatchObject({ kind: 'due', index: 2, record: { seq: 9 } });
    if (second.kind !== 'due') throw new Error(second.kind);
    await log.recordAttempt(
      runId,
      1,
      second,
      { ...second.record, status: 'failed', attempts: 1, lastStatusCode: null },
      true,
    );
    expect(await log.next(runId, 1)).toEqual({ kind: 'idle' }); // and the log names no job any more
    expect(await log.enqueue(runId, 5, 'run.paused')).toEqual({ kind: 'idle' }); // a late duplicate starts nothing
    expect(await log.enqueue(runId, 12, 'run.completed')).toEqual({ kind: 'queued', gen: 2 }); // a new delivery starts the next generation
    expect((await log.list(runId)).map((d) => [d.status, d.attempts, d.lastStatusCode])).toEqual([
      ['delivered', 2, 204],
      ['failed', 1, null],
      ['pending', 0, null],
    ]);
  });

  it('a job that failed for good hands the log to the next generation', async () => {
    const runId = await create(notify());
    await store.webhooks.enqueue(runId, 3, 'run.paused');
    expect(await store.webhooks.enqueue(runId, null, '', 7)).toEqual({ kind: 'queued', gen: 1 }); // not the owner: nothing changes
    expect(await store.webhooks.enqueue(runId, null, '', 1)).toEqual({ kind: 'queued', gen: 2 });
    expect(await store.webhooks.next(runId, 1)).toEqual({ kind: 'stale' });
  });

  it('the log expires with its run, whether it existed when the run ended or came after; a gone run logs nothing', async () => {
    const before = await create(notify());
    await store.webhooks.enqueue(before, 1, 'run.paused');
    expect(await redis.pttl(store.keys.run(before).webhooks)).toBe(-1); // a live run's keys carry no TTL
    const after = await create(notify());
    const fail = {
      status: 'failed' as const,
      stopReason: null,
      error: { code: 'x', message: 'y' },
      events: [{ type: 'run.failed' as const, data: { error: { code: 'x', message: 'y' } } }],
    };
    for (const runId of [before, after]) await store.finish(runId, { expectIteration: null, ...fail });
    await store.webhooks.enqueue(after, 2, 'run.failed');
    for (const runId of [before, after]) {
      const ttl = await redis.pttl(store.keys.run(runId).webhooks);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
    await redis.del(store.keys.run(after).state, store.keys.run(after).webhooks);
    expect(await store.webhooks.enqueue(after, 3, 'run.cancelled')).toEqual({ kind: 'gone' });
    expect(await store.webhooks.next(after, 1)).toEqual({ kind: 'gone' });
    expect(await store.webhooks.saveBody(after, 1, 1, 'b')).toBeNull();
    expect(await redis.exists(store.keys.run(after).webhooks)).toBe(0); // never recreated
  });
});
