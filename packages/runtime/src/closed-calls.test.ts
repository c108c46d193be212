import { describe, expect, it } from 'vitest';
import { type NewEvent } from '@agentloop/protocol';
import { useTestStore } from './test-support/test-store.js';
import { CLOSED_CALLS, type CloseKind } from './closed-calls.js';
import { TEST_TOTALS, runInModelCall } from './test-support/run-fixtures.js';

/** A call answered without running gets the answer closed-calls.ts builds (the script adds its name and arguments). */
describe('answers of calls that will not run, built in TypeScript (real Redis)', () => {
  const t = useTestStore('closed-calls');
  const totals = TEST_TOTALS;
  const started: NewEvent[] = [
    { type: 'run.started', data: {} },
    { type: 'iteration.started', data: { iteration: 1 } },
  ];

  async function withCall(): Promise<string> {
    const runId = await runInModelCall(t.store, started);
    const message = {
      role: 'assistant' as const,
      content: null,
      toolCalls: [{ id: 'x1', name: 'lookup', arguments: '{"q":"a"}' }],
    };
    const meta = { name: 'lookup', arguments: '{"q":"a"}', display: '{"q":"a"}', pool: 'default', iteration: 1 };
    await t.store.checkpoint(runId, {
      iteration: 1,
      message,
      totals,
      iterationUsage: {},
      final: null,
      calls: [{ id: 'x1', meta, outcome: null }],
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    return runId;
  }

  const expected = (kind: CloseKind) => {
    const a = CLOSED_CALLS[kind];
    return { status: a.status, content: JSON.stringify({ ok: false, error: a.error }), error: a.error };
  };

  it.each(['cancelled', 'job_failed', 'no_runner', 'outcome_unknown', 'skipped'] as const)(
    'closeToolCall %s',
    async (kind) => {
      const runId = await withCall();
      expect(await t.store.calls.closeToolCall(runId, 'x1', kind)).toBe(true);
      expect((await t.store.calls.record(runId, 'x1'))!.outcome).toEqual(expected(kind));
      const ev = (await t.store.events(runId)).at(-1)!;
      expect(ev).toMatchObject({
        type: 'tool.call',
        data: {
          callId: 'x1',
          name: 'lookup',
          arguments: { q: 'a' },
          status: CLOSED_CALLS[kind].status,
          error: CLOSED_CALLS[kind].error,
        },
      });
      expect((await t.store.load(runId))!.pendingFinal).toBe(kind === 'skipped' ? 'budget_exceeded' : '');
    },
  );

  it('a run that ends with its call open answers it run_ended; a batch whose job failed, job_failed', async () => {
    const ended = await withCall();
    await t.store.finish(ended, {
      expectIteration: 1,
      status: 'cancelled',
      stopReason: 'cancelled',
      error: null,
      events: [],
    });
    expect((await t.store.calls.record(ended, 'x1'))!.outcome).toEqual(expected('run_ended'));
    const failed = await withCall();
    const start = {
      iteration: 2,
      expectPhase: 'tools' as const,
      expectPendingFinal: '' as const,
      callMode: 'tools' as const,
      events: [],
    };
    // the next iteration does not start over an open call (a delivery may still run it): whoever learns that its job
    // failed for good answers it (the flow parent), then starts
    expect(await t.store.startIteration(failed, start)).toBe('waiting');
    expect((await t.store.calls.record(failed, 'x1'))!.outcome).toBeFalsy();
    expect(await t.store.calls.closeToolCall(failed, 'x1', 'job_failed')).toBe(true);
    expect(await t.store.startIteration(failed, start)).toMatchObject({ length: expect.any(Number) });
    expect((await t.store.calls.record(failed, 'x1'))!.outcome).toEqual(expected('job_failed'));
    expect((await t.store.messages(failed)).at(-1)).toEqual({
      role: 'tool',
      toolCallId: 'x1',
      content: expected('job_failed').content,
    });
  });
});
