import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import { QUEUES } from '@agentloop/protocol';
import { Metrics, Partitions, QueueSet, RunStore, ToolCatalog, createLogger, partitionOf } from '@agentloop/runtime';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { RunIntake } from './intake.js';
import { RequestsWorker } from './requests-worker.js';

/** SPEC §2 queue intake: a job that names an existing run (or idempotency key) with another body is refused, visibly. */
describe('RequestsWorker (real Redis, real BullMQ)', () => {
  let redis: Redis;
  let queues: QueueSet;
  let queue: Queue;
  let worker: RequestsWorker;
  let store: RunStore;
  const prefix = testPrefix('requests');
  beforeAll(async () => {
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    queues = new QueueSet(redis, prefix);
    store = new RunStore(redis, prefix);
    const intake = new RunIntake(
      new Partitions([partitionOf(store, queues)]),
      new ToolCatalog(redis, prefix),
      new Metrics(),
    );
    worker = new RequestsWorker(redis, prefix, intake, createLogger('silent'), 60_000);
    await worker.start();
    queue = new Queue(QUEUES.requests, { connection: redis, prefix });
  });
  afterAll(async () => {
    await worker.close();
    await queue.close();
    await queues.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const request = (input: string) => ({ input, model: { provider: 'openai', name: 'gpt-4o-mini' } });
  /** The job once it completed or failed (what a backend observes: its state, return value, failedReason). */
  const settled = async (job: Job) => {
    await expect.poll(async () => job.getState(), { timeout: 10_000, interval: 50 }).toMatch(/^(completed|failed)$/);
    return (await queue.getJob(job.id!))!;
  };
  /** Everything stored about a run: its state hash and transcript. */
  const runRecord = async (runId: string) => ({
    state: await redis.hgetall(store.keys.run(runId).state),
    messages: await redis.lrange(store.keys.run(runId).messages, 0, -1),
  });

  it('a job whose runId names an existing run with another body fails (idempotency_mismatch, no retry) and leaves that run alone', async () => {
    const runId = `rq_${Date.now()}`;
    const first = await settled(await queue.add('run', { tenantId: 'T', runId, request: request('one') }));
    expect(first.returnvalue).toEqual({ id: runId });
    const before = await runRecord(runId);
    for (const other of [request('two'), { input: 42 }]) {
      // another valid body, and an invalid one
      const job = await settled(await queue.add('run', { tenantId: 'T', runId, request: other }, { attempts: 5 }));
      expect(await job.getState()).toBe('failed');
      expect(job.failedReason).toMatch(/^idempotency_mismatch: /);
      expect(job.attemptsMade).toBe(1); // unrecoverable: never retried
    }
    expect(await runRecord(runId)).toEqual(before);
    // a redelivery with the same body is still a no-op that answers the run
    const again = await settled(await queue.add('run', { tenantId: 'T', runId, request: request('one') }));
    expect(again.returnvalue).toEqual({ id: runId });
    expect(await runRecord(runId)).toEqual(before);
  });

  it('an idempotencyKey reused with another body fails the same way', async () => {
    const key = `key-${Date.now()}`;
    const first = await settled(
      await queue.add('run', { tenantId: 'T', idempotencyKey: key, request: request('one') }),
    );
    const { id } = first.returnvalue as { id: string };
    const before = await runRecord(id);
    const job = await settled(await queue.add('run', { tenantId: 'T', idempotencyKey: key, request: request('two') }));
    expect(await job.getState()).toBe('failed');
    expect(job.failedReason).toMatch(/^idempotency_mismatch: /);
    expect(await runRecord(id)).toEqual(before);
    const again = await settled(
      await queue.add('run', { tenantId: 'T', idempotencyKey: key, request: request('one') }),
    );
    expect(again.returnvalue).toEqual({ id });
  });
});
