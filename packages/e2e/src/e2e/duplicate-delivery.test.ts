import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { DEFAULT_RESULT_TOKENS, QUEUES, advanceJobId, toolJobId } from '@agentloop/protocol';
import { stepOf, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { finishedRun, until } from '../test-support/helpers.js';

/**
 * Issue 11's duplicate-delivery harness, deterministic: at every transition of a run — the first iteration, each
 * model call while it streams, each checkpoint and dispatch, each tool call, the pause, the resume — the harness
 * delivers the job that made it again (same job id, after it finished: BullMQ's redelivery) and adds a second job of
 * the same iteration at once (another id: a resume or a stray publish racing the flow's parent). Each run must still
 * make exactly one model request per iteration, execute each call once, and keep a gap-free event log.
 */
describe('duplicate deliveries at every transition of the loop', () => {
  let s: InProcessStack;
  let orchestrator: Queue;
  let tools: Queue;
  const added: string[] = [];
  const dup = async (queue: Queue, name: string, data: Record<string, unknown>, jobId: string) => {
    added.push(jobId);
    await queue.add(name, data, { jobId, removeOnComplete: true, removeOnFail: true });
  };
  /** Everything already delivered for this run, delivered again, plus a rival job of the iteration that streams now. */
  const storm = async (req: MockRequest) => {
    const runId = String(req.body.prompt_cache_key ?? '');
    if (!runId) return;
    const k = stepOf(req) + 1; // the iteration calling the model right now
    await dup(orchestrator, 'advance', { runId, iteration: k }, advanceJobId(runId, k, 'rival'));
    for (let j = 1; j <= k; j++) await dup(orchestrator, 'advance', { runId, iteration: j }, advanceJobId(runId, j));
    for (const m of req.messages)
      for (const c of m.toolCalls ?? [])
        await dup(
          tools,
          'tool',
          {
            runId,
            tenantId: 'tenant-a',
            callId: c.id,
            name: c.name,
            arguments: c.arguments,
            iteration: k - 1,
            maxResultTokens: DEFAULT_RESULT_TOKENS,
          },
          toolJobId(runId, c.id),
        );
  };
  const script = async (req: MockRequest): Promise<ReplySpec> => {
    await storm(req);
    const approval = /approve/.test(req.messages.find((m) => m.role === 'user')?.content ?? '');
    const step = stepOf(req);
    if (step === 0)
      return {
        toolCalls: [
          { name: 'effect', args: { label: 'a', ms: 30 } },
          { name: 'effect', args: { label: 'b' } },
          { name: 'lookup', args: { key: 'k' } },
        ],
        delayMs: 15,
      };
    // a local call too (SPEC §6: run in the iteration, no tool job): rival jobs of its iteration must not run it again
    const local = { name: 'local_effect', args: { label: 'L', ms: 30 } };
    if (step === 1)
      return approval
        ? {
            toolCalls: [{ name: 'effect', args: { label: 'c' } }, local, { name: 'send_email', args: { to: 'a@b.c' } }],
            delayMs: 15,
          }
        : { toolCalls: [{ name: 'effect', args: { label: 'c' } }, local], delayMs: 15 };
    return { text: 'done', delayMs: 15 };
  };
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    orchestrator = new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix });
    tools = new Queue(QUEUES.tools('default'), { connection: s.redis, prefix: s.keyPrefix });
  }, 30_000);
  afterAll(async () => {
    await orchestrator?.close();
    await tools?.close();
    await s?.stop();
  });

  it.each(['three iterations with parallel calls', 'an approval in the middle (pause and resume)'])(
    '%s: one model request per iteration, each call once, a gap-free log',
    async (kind) => {
      const approval = kind.startsWith('an approval');
      const model = { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' };
      const before = s.mock.requests.length;
      const effectsBefore = s.effects().length;
      const id = await s.a.startRun({
        input: approval ? 'please approve' : 'go',
        model,
        tools: ['effect', 'send_email', 'lookup', 'local_effect'],
      });
      if (approval) {
        const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
        const decide = () =>
          s.a.request('POST', `/v1/runs/${id}/decisions`, {
            decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
          });
        const [one, two] = await Promise.all([decide(), decide()]);
        expect([one.status, two.status].sort()).toEqual([202, 409]);
        // the resume job, delivered again and raced by a rival, once the resumed iteration started
        await until(
          'the resumed iteration',
          async () => (await s.a.getRun(id)).json.iteration >= 3 || (await s.a.getRun(id)).json.status === 'completed',
        );
        await dup(orchestrator, 'advance', { runId: id, iteration: 3 }, advanceJobId(id, 3, 'resume'));
      }
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(snap.output).toBe('done');
      // let every duplicate of this run be processed before counting
      await until('duplicates processed', async () => {
        const [o, t] = await Promise.all([
          orchestrator.getJobCounts('waiting', 'active', 'prioritized'),
          tools.getJobCounts('waiting', 'active', 'prioritized'),
        ]);
        return Object.values(o).every((n) => n === 0) && Object.values(t).every((n) => n === 0);
      });
      const mine = s.mock.requests.slice(before);
      expect(mine.map((r) => stepOf(r))).toEqual([0, 1, 2]); // exactly one model request per iteration
      const ends = s
        .effects()
        .slice(effectsBefore)
        .filter((e) => e.phase === 'end' && String(e.key).startsWith(id));
      expect(ends.map((e) => e.label).sort()).toEqual(['L', 'a', 'b', 'c']); // each call executed once, the local one too
      expect(
        s
          .effects()
          .slice(effectsBefore)
          .filter((e) => e.phase === 'start' && String(e.key).startsWith(id)),
      ).toHaveLength(4);
      expect(new Set(ends.map((e) => e.key)).size).toBe(4);
      // a read tool, recorded in one step, is not executed again either
      expect(
        s
          .effects()
          .slice(effectsBefore)
          .filter((e) => e.tool === 'lookup' && String(e.key).startsWith(id)),
      ).toHaveLength(1);
      // the approved external call — the one call that must never run twice — ran once, under its own key
      const sent = s
        .effects()
        .slice(effectsBefore)
        .filter((e) => e.tool === 'send_email' && String(e.key).startsWith(id));
      expect(sent).toHaveLength(approval ? 1 : 0);
      if (approval) expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(1);
      expect(events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2, 3]);
      expect(added.filter((j) => j.startsWith(id)).length).toBeGreaterThan(5); // the harness did deliver duplicates
      const after = (await s.a.events(id)).events;
      expect(after.length).toBe(events.length); // nothing was appended after the terminal event
    },
  );
});
