import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  CALL_TRANSITIONS,
  PHASE_TRANSITIONS,
  STATUS_TRANSITIONS,
  allows,
  newRunId,
  type NewEvent,
} from '@agentloop/protocol';
import { useTestStore } from './test-support/test-store.js';
import { TEST_REQUEST, TEST_TOTALS } from './test-support/run-fixtures.js';

const CALLS = ['a', 'b'];
const totals = TEST_TOTALS;
const meta = { name: 't', arguments: '{}', display: '{}', pool: 'default', iteration: 1 };
const tc = (callId: string, status: 'running' | 'completed') => ({ callId, name: 't', arguments: {}, status });

/** One step a process may take on a run, whatever the run's state (the scripts decide whether it applies). */
type Op =
  | { kind: 'start'; expectPhase: 'queued' | 'tools' }
  | { kind: 'checkpoint'; target: 'tools' | 'paused' | 'completed' }
  | { kind: 'mark'; call: string; owner: string; takeFrom: string }
  | { kind: 'result'; call: string; owner: string }
  | { kind: 'close'; call: string; reason: 'cancelled' | 'job_failed' | 'no_runner' | 'outcome_unknown' | 'skipped' }
  | { kind: 'decide'; action: 'approve' | 'deny' }
  | { kind: 'cancel' }
  | { kind: 'end'; status: 'failed' | 'cancelled' };

const call = fc.constantFrom(...CALLS);
const owner = fc.constantFrom('', 'j@1', 'j@2');
// ends are rarer than steps, so a walk goes deep before it stops
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('start' as const),
      expectPhase: fc.constantFrom('queued' as const, 'tools' as const),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('checkpoint' as const),
      target: fc.constantFrom('tools' as const, 'paused' as const, 'completed' as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('mark' as const),
      call,
      owner: fc.constantFrom('j@1', 'j@2'),
      takeFrom: owner,
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('result' as const), call, owner }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('close' as const),
      call,
      reason: fc.constantFrom(
        'cancelled' as const,
        'job_failed' as const,
        'no_runner' as const,
        'outcome_unknown' as const,
        'skipped' as const,
      ),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('decide' as const),
      action: fc.constantFrom('approve' as const, 'deny' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('cancel' as const) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('end' as const),
      status: fc.constantFrom('failed' as const, 'cancelled' as const),
    }),
  },
);

/**
 * The declared state machine (protocol's STATUS_TRANSITIONS, PHASE_TRANSITIONS, CALL_TRANSITIONS) against the real
 * scripts: random steps, in any order, by racing or stale deliveries, on a real Redis. Every change of a run's status,
 * phase or call status that any step makes is one the tables list; the events stay gap-free; an ended run never moves.
 */
describe('the run and call state machine, driven at random through the scripts (real Redis, fast-check)', () => {
  const t = useTestStore('state-machine');
  const request = TEST_REQUEST;

  async function snapshot(runId: string) {
    const [status, phase, iteration, seq, ...calls] = await t.redis.hmget(
      t.store.keys.run(runId).state,
      'status',
      'phase',
      'iteration',
      'seq',
      ...CALLS.map((c) => `c:${c}:st`),
    );
    return {
      status: status!,
      phase: phase!,
      iteration: Number(iteration),
      seq: Number(seq ?? 0),
      calls: calls.map((c) => c ?? 'unknown'),
    };
  }

  async function apply(runId: string, o: Op): Promise<void> {
    const s = t.store;
    const { iteration } = await snapshot(runId);
    switch (o.kind) {
      case 'start': {
        const events: NewEvent[] = [{ type: 'iteration.started', data: { iteration: iteration + 1 } }];
        await s.startIteration(runId, {
          iteration: iteration + 1,
          expectPhase: o.expectPhase,
          expectPendingFinal: '',
          callMode: 'tools',
          events,
          owner: 'j@1',
        });
        return;
      }
      case 'checkpoint': {
        // the first batch's calls are the ones watched; later batches get ids of their own (a reused id is refused)
        const ids = o.target === 'completed' ? [] : CALLS.map((c) => (iteration <= 1 ? c : `${c}${iteration}`));
        const message = {
          role: 'assistant' as const,
          content: o.target === 'completed' ? 'done' : null,
          ...(ids.length ? { toolCalls: ids.map((id) => ({ id, name: 't', arguments: '{}' })) } : {}),
        };
        const pause =
          o.target === 'paused'
            ? {
                pending: [{ callId: ids[0]!, name: 't', arguments: {}, pauseType: 'awaiting_approval' as const }],
                expiresAt: Date.now() + 60_000,
              }
            : undefined;
        const final = o.target === 'completed' ? { output: 'done', stopReason: 'final_answer' as const } : null;
        await s.checkpoint(
          runId,
          {
            iteration,
            message,
            totals,
            iterationUsage: {},
            final,
            calls: ids.map((id) => ({ id, meta, outcome: null })),
            pendingFinal: '',
            repeat: { fingerprint: '', count: 0 },
            events: [],
            ...(pause ? { pause } : {}),
          },
          'j@1',
        );
        return;
      }
      case 'mark':
        await s.calls.markToolRunning(runId, o.call, tc(o.call, 'running'), o.owner, o.takeFrom);
        return;
      case 'result':
        await s.calls.recordToolResult(
          runId,
          o.call,
          { status: 'completed', content: 'ok', executed: true },
          tc(o.call, 'completed'),
          o.owner ? undefined : tc(o.call, 'running'),
          o.owner,
        );
        return;
      case 'close':
        await s.calls.closeToolCall(runId, o.call, o.reason);
        return;
      case 'decide': {
        const outcome =
          o.action === 'deny'
            ? {
                status: 'denied' as const,
                content: 'denied',
                error: { code: 'denied' as const, message: 'no', retryable: false },
              }
            : null;
        const pending = JSON.parse((await t.redis.hget(s.keys.run(runId).state, 'pending')) || '[]') as Array<{
          callId: string;
        }>;
        await s.applyDecisions(runId, {
          tenant: 'T',
          decisions: [{ callId: pending[0]?.callId ?? 'a', action: o.action, outcome, meta: null }],
          edits: {},
        });
        return;
      }
      case 'cancel':
        await s.requestCancel(runId, 'test');
        return;
      case 'end':
        await s.finish(runId, {
          expectIteration: null,
          status: o.status,
          stopReason: null,
          error: null,
          events: [
            {
              type: o.status === 'failed' ? 'run.failed' : 'run.cancelled',
              data: o.status === 'failed' ? { error: { code: 'x', message: 'x' } } : { reason: 'x' },
            } as NewEvent,
          ],
        });
        return;
    }
  }

  it('every change any step makes is one the tables list', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 20 }), async (ops) => {
        const runId = newRunId();
        await t.store.create({
          runId,
          tenant: 'T',
          request,
          messages: [{ role: 'user', content: 'hi' }],
          bodyHash: 'h',
        });
        let before = await snapshot(runId);
        expect(allows(STATUS_TRANSITIONS, 'created', before.status as never)).toBe(true);
        for (const o of ops) {
          await apply(runId, o);
          const after = await snapshot(runId);
          const where = `${JSON.stringify(o)}: ${JSON.stringify(before)} -> ${JSON.stringify(after)}`;
          expect(allows(STATUS_TRANSITIONS, before.status, after.status as never), where).toBe(true);
          expect(allows(PHASE_TRANSITIONS, before.phase, after.phase as never), where).toBe(true);
          after.calls.forEach((c, i) =>
            expect(allows(CALL_TRANSITIONS, before.calls[i]!, c as never), where).toBe(true),
          );
          if (['completed', 'failed', 'cancelled'].includes(before.status)) expect(after, where).toEqual(before);
          if (before.status !== after.status) seen.add(`${before.status}>${after.status}`);
          if (before.phase !== after.phase) seen.add(`${before.phase}>${after.phase}`);
          before = after;
        }
        const events = await t.store.events(runId);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      }),
      {
        numRuns: 100,
        // a walk through the main road, whatever the seed: a pause decided, calls run and answered, the next iteration
        examples: [
          [
            [
              { kind: 'start', expectPhase: 'queued' },
              { kind: 'checkpoint', target: 'paused' },
              { kind: 'decide', action: 'approve' },
              { kind: 'mark', call: 'a', owner: 'j@1', takeFrom: '' },
              { kind: 'result', call: 'a', owner: 'j@1' },
              { kind: 'result', call: 'b', owner: '' },
              { kind: 'start', expectPhase: 'tools' },
              { kind: 'checkpoint', target: 'tools' },
              { kind: 'start', expectPhase: 'tools' },
              { kind: 'checkpoint', target: 'completed' },
            ],
          ],
        ],
      },
    );
    // the walk reached the machine's main transitions (not a property that holds vacuously)
    expect([...seen]).toEqual(
      expect.arrayContaining([
        'queued>running',
        'running>paused',
        'paused>running',
        'queued>model',
        'model>tools',
        'tools>model',
        'model>paused',
        'paused>tools',
      ]),
    );
  });
});
