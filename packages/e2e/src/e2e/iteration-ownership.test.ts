import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES, advanceJobId } from '@agentloop/protocol';
import { DEFAULT_JOB_OPTIONS, RunStore } from '@agentloop/runtime';
import { checkEvents, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { finishedRun, until } from '../test-support/helpers.js';

const turns = (req: MockRequest) => req.messages.filter((m) => m.role === 'assistant').length;

/**
 * Issue 11: one iteration has several job ids (the flow parent, a resume, a duplicate). Only the job that
 * started the iteration's model call may resume it: a second job arriving mid-stream must not call the model again.
 */
describe('iteration ownership', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: (req): ReplySpec =>
        turns(req) < 2
          ? {
              toolCalls: [{ name: 'calculator', args: { expression: `${turns(req)}+1` } }],
              chunking: 'fine',
              delayMs: 30,
            }
          : { text: 'the answer is here', chunking: 'fine', delayMs: 30 },
    });
  }, 30_000);
  afterAll(() => s?.stop());

  it('other jobs of an iteration that arrive while its model call streams do nothing: one model request per iteration', async () => {
    const queue = new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix });
    try {
      const before = s.mock.requests.length;
      const id = await s.a.startRun({
        input: 'go',
        model: { provider: 'openai', name: 'gpt-4o-mini' },
        tools: ['calculator'],
      });
      for (const k of [1, 2, 3]) {
        await until(`iteration ${k} streams`, async () => {
          const snap = (await s.a.getRun(id)).json;
          return snap.iteration >= k || snap.status === 'completed';
        });
        for (const suffix of ['dup-a', 'dup-b', 'resume'])
          await queue.add(
            'advance',
            { runId: id, iteration: k },
            { ...DEFAULT_JOB_OPTIONS, jobId: advanceJobId(id, k, suffix) },
          );
      }
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap).toMatchObject({ status: 'completed', iteration: 3, output: 'the answer is here' });
      expect(s.mock.requests.length - before).toBe(3);
      // the final iteration's deltas, concatenated, are the output once (no second stream interleaved)
      const deltas = events
        .filter((e) => e.type === 'message.delta' && e.data.iteration === 3)
        .map((e) => e.data.text)
        .join('');
      expect(deltas).toBe('the answer is here');
      expect(events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2, 3]);
    } finally {
      await queue.close();
    }
  });

  it('a delivery fenced out of its iteration mid-stream stops its model call; the delivery that took it over finishes the iteration', async () => {
    const words = Array.from({ length: 80 }, (_, i) => `w${i}`).join(' ');
    s.mock.setScript(() => ({ text: words, chunking: 'fine', delayMs: 40 }));
    const queue = new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix });
    const store = new RunStore(s.redis, s.keyPrefix);
    try {
      const before = s.mock.requests.length;
      const closedBefore = s.mock.closedEarly;
      const id = await s.a.startRun({ input: 'go', model: { provider: 'openai', name: 'gpt-4o-mini' } });
      await until('deltas of iteration 1', async () =>
        (await s.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
      );
      // another delivery takes the model call over, as BullMQ does after a missed lock renewal
      const thief = advanceJobId(id, 1, 'thief');
      expect(
        await store.claimModelCall(id, 1, (await store.load(id))!.owner, `${thief}@t`, {
          type: 'llm.retry',
          data: {
            provider: 'openai',
            model: 'gpt-4o-mini',
            attempt: 2,
            reason: 'worker_restarted',
            discardOutput: true,
          },
        }),
      ).toEqual({ discarded: true });
      await until('the fenced delivery to leave the model', () => s.mock.inFlight === 0);
      expect(s.mock.closedEarly - closedBefore).toBe(1); // it hung up, rather than stream (and be billed for) the rest
      expect((await s.a.getRun(id)).json).toMatchObject({ status: 'running', output: null }); // and recorded nothing
      await queue.add('advance', { runId: id, iteration: 1 }, { ...DEFAULT_JOB_OPTIONS, jobId: thief });
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap).toMatchObject({ status: 'completed', iteration: 1, output: words });
      expect(s.mock.requests.length - before).toBe(2);
      expect(checkEvents(events)).toEqual([]);
      const retry = events.find((e) => e.type === 'llm.retry');
      expect(retry?.data).toMatchObject({ discardOutput: true, reason: 'worker_restarted' });
      const after = events
        .slice(events.indexOf(retry!))
        .filter((e) => e.type === 'message.delta')
        .map((e) => e.data.text)
        .join('');
      expect(after).toBe(words);
    } finally {
      await queue.close();
    }
  });
});
