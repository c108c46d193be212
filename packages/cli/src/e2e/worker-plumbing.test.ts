import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';
import { InProcessStack } from '../test-support/stack.js';

/** Malformed jobs fail at once (no retries) and touch no run: nothing is written for a run id they do not have. */
describe('worker plumbing', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: () => ({ text: 'ok' }) });
  }, 30_000);
  afterAll(() => s?.stop());

  it.each([
    [QUEUES.orchestrator, 'advance', { foo: 1 }],
    [QUEUES.orchestrator, 'advance', { runId: 'x:y', iteration: 1 }],
    [QUEUES.orchestrator, 'expire', { runId: 'r' }],
    [QUEUES.tools('default'), 'tool', { callId: 'c' }],
    [QUEUES.compressor, 'summarize', { runId: 1 }],
    [QUEUES.requests, 'run', { request: {} }],
  ])('%s job %s with malformed data %j fails once, for good', async (queueName, name, data) => {
    const queue = new Queue(queueName, { connection: s.redis, prefix: s.prefix });
    try {
      const job = await queue.add(name, data, { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
      await expect.poll(async () => job.getState(), { timeout: 10_000 }).toBe('failed');
      const failed = (await queue.getJob(job.id!))!;
      expect(failed.attemptsMade).toBe(1);
      expect(await s.redis.keys(`${s.prefix}:run:{undefined}*`)).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});
