import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';
import { stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { SLOTS_PER_LANE } from '@agentloop/runtime';
import { blockingConnection, finishedRun, scanKeys, until } from '../test-support/helpers.js';

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
    const queue = new Queue(queueName, { connection: s.redis, prefix: s.keyPrefix });
    try {
      const job = await queue.add(name, data, { attempts: 5, backoff: { type: 'fixed', delay: 10 } });
      await expect.poll(async () => job.getState(), { timeout: 10_000 }).toBe('failed');
      const failed = (await queue.getJob(job.id!))!;
      expect(failed.attemptsMade).toBe(1);
      expect(await scanKeys(s.redis, `${s.keyPrefix}:run:{undefined}*`)).toEqual([]);
    } finally {
      await queue.close();
    }
  });
});

/**
 * Issue 11: no nudge jobs. A tool job that fails for good — here on a pool whose only worker is this test's, which
 * fails it without answering the call, as a runner that could not reach Redis would — is answered by its flow's
 * parent, the one job BullMQ always runs after the failure. In a resumed mixed batch that parent is the pause's gate
 * job, a job of another flow than the resume's: before, only the tool-runner's nudge job could start the iteration.
 */
describe('a tool job that fails for good in a parked mixed batch', () => {
  let s: InProcessStack;
  const script = (req: MockRequest): ReplySpec =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'offsite', args: { key: 'k' } },
            { name: 'send_email', args: { to: 'a@b.c' } },
          ],
        }
      : { text: `after: ${stepResults(req, 0).join(' | ')}` };
  beforeAll(async () => {
    s = await InProcessStack.start({ script, pools: ['default'] });
  }, 30_000);
  afterAll(() => s?.stop());

  it.each(['fails before the decision', 'fails after the decision'])(
    'the run resumes and completes when the auto call %s',
    async (order) => {
      const id = await s.a.startRun({
        input: 'go',
        model: { provider: 'openai', name: 'gpt-4o-mini' },
        tools: ['offsite', 'send_email'],
      });
      const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
      const email = paused.pending[0]!;
      const failOffsite = async () => {
        const connection = blockingConnection(s.redis);
        const worker = new Worker(
          QUEUES.tools('offsite'),
          async () => {
            throw new UnrecoverableError('the runner lost its tool');
          },
          { connection, prefix: s.keyPrefix },
        );
        const queue = new Queue(QUEUES.tools('offsite'), { connection: s.redis, prefix: s.keyPrefix });
        await until('the offsite job failed', async () => (await queue.getFailed()).some((j) => j.data.runId === id));
        await queue.close();
        await worker.close();
        connection.disconnect();
      };
      if (order === 'fails before the decision') await failOffsite();
      expect(
        (
          await s.a.request('POST', `/v1/runs/${id}/decisions`, {
            decisions: [{ callId: email.callId, action: 'approve' }],
          })
        ).status,
      ).toBe(202);
      if (order === 'fails after the decision') await failOffsite();
      const { snap } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(snap.output).toMatch(/after: .*tool_error.*\| .*sent/);
      // nothing but the flows' own jobs: no advance job beyond the gate and the resume for iteration 2
      const jobs = await new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix }).getJobs([
        'completed',
        'waiting',
        'prioritized',
        'delayed',
        'failed',
        'active',
      ]);
      expect(jobs.filter((j) => j.data.runId === id && /nudge/.test(j.id ?? ''))).toEqual([]);
      // the resumed iteration started: the run left the resuming set (the reconciler has nothing to re-publish)
      expect(await s.redis.zscore(`${s.keyPrefix}:resuming`, id)).toBeNull();
    },
  );
});

/**
 * Worker lanes: slots above SLOTS_PER_LANE run as several BullMQ workers of one process (here 2 for the orchestrator,
 * 2 for the tool pool). Runs with tool calls complete through them, each call executed once.
 */
describe('a role whose slots take more than one lane', () => {
  let s: InProcessStack;
  const script = (req: MockRequest): ReplySpec =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'lookup', args: { key: 'k' } }] }
      : { text: `found: ${stepResults(req, 0).join(' | ')}` };
  beforeAll(async () => {
    s = await InProcessStack.start({
      script,
      env: {
        AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(SLOTS_PER_LANE + 1),
        AGENTLOOP_TOOL_CONCURRENCY: String(SLOTS_PER_LANE + 1),
      },
    });
  }, 30_000);
  afterAll(() => s?.stop());

  it('runs are advanced and their calls executed by every lane, each once', async () => {
    const ids = await Promise.all(
      Array.from({ length: 40 }, () =>
        s.a.startRun({ input: 'go', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['lookup'] }),
      ),
    );
    for (const id of ids) {
      const { snap, messages } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(messages.filter((m) => m.role === 'tool')).toHaveLength(1);
      expect(s.effects().filter((e) => e.tool === 'lookup' && String(e.key).startsWith(`${id}:`))).toHaveLength(1);
    }
  });
});
