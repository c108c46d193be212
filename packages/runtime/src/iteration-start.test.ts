import { describe, expect, it } from 'vitest';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';
import { useTestStore } from './test-support/test-store.js';

/** An iteration that goes on in the job that ran its batch's reads records them in its start: one step (real Redis). */
describe('startIteration with the batch\'s results (one step)', () => {
  const t = useTestStore('iteration-start');
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  const totals = { promptTokens: 1, completionTokens: 1, reasoningTokens: 0, cachedTokens: 0, totalTokens: 2, costUsd: 0, llmCalls: 1 };
  const started: NewEvent[] = [{ type: 'run.started', data: {} }, { type: 'iteration.started', data: { iteration: 1 } }];
  const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
  const read = (id: string, text: string) => ({ callId: id, outcome: { status: 'completed' as const, content: text, result: text, durationMs: 1, executed: true }, eventData: ev(id, 'completed'), unstarted: ev(id, 'running'), owner: '' });
  const next = { iteration: 2, expectPhase: 'tools', expectPendingFinal: '', callMode: 'tools', events: [{ type: 'iteration.started', data: { iteration: 2 } }] as NewEvent[], owner: 'job@A' };

  async function withCalls(ids: string[]): Promise<string> {
    const runId = newRunId();
    await t.store.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await t.store.startIteration(runId, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started, owner: 'job@A' });
    const message = { role: 'assistant' as const, content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) };
    const meta = { name: 'a', arguments: '{}', display: '{}', pool: 'local', iteration: 1 };
    await t.store.checkpoint(runId, { iteration: 1, message, totals, iterationUsage: {}, final: null, calls: ids.map((id) => ({ id, meta, outcome: null })), pendingFinal: '', repeat: { fingerprint: '', count: 0 }, events: [] });
    return runId;
  }

  it('records the results, then starts with them in the transcript, in one script', async () => {
    const runId = await withCalls(['r1', 'r2']);
    const steps: string[] = [];
    const run = t.store['scripts'].statusRun.bind(t.store['scripts']);
    t.store['scripts'].statusRun = ((...a: Parameters<typeof run>) => (steps.push(a[0]), run(...a))) as typeof run;
    const { started, recorded } = await t.store.startIterationRecording(runId, { ...next, expectBatch: ['r1', 'r2'], results: [read('r1', 'one'), read('r2', 'two')] });
    expect(recorded).toEqual(['recorded', 'recorded']);
    expect(started).toMatchObject({ appended: [{ role: 'tool', toolCallId: 'r1', content: 'one' }, { role: 'tool', toolCallId: 'r2', content: 'two' }] });
    expect(steps).toEqual(['startIteration']);
    const events = await t.store.events(runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.slice(-5).map((e) => (e.type === 'tool.call' ? `${(e.data as { callId: string }).callId}:${(e.data as { status: string }).status}` : e.type))).toEqual(['r1:running', 'r1:completed', 'r2:running', 'r2:completed', 'iteration.started']);
    expect((await t.store.load(runId))!.phase).toBe('model');
  });

  it('a start refused still records what it carried; a call another delivery owns is neither recorded nor answered over', async () => {
    const runId = await withCalls(['r1', 'e1']);
    expect(await t.store.markToolRunning(runId, 'e1', ev('e1', 'running'), 'job@B')).toBe('first'); // another delivery runs e1
    const owned = { ...read('e1', 'mine'), unstarted: undefined, owner: 'job@A' };
    const first = await t.store.startIterationRecording(runId, { ...next, results: [read('r1', 'one'), owned] });
    expect(first).toEqual({ started: 'waiting', recorded: ['recorded', 'stale'] }); // e1 is still open: no start over it
    expect((await t.store.calls.metaAndOutcomes(runId, ['r1', 'e1'])).map((o) => o.outcome?.content ?? null)).toEqual(['one', null]);
    const stale = await t.store.startIterationRecording(runId, { ...next, iteration: 3, results: [read('r1', 'again')] });
    expect(stale).toEqual({ started: 'stale', recorded: [null] }); // the duplicate changes nothing
    await t.store.recordToolResult(runId, 'e1', read('e1', 'theirs').outcome, ev('e1', 'completed'), undefined, 'job@B');
    expect(await t.store.startIteration(runId, next)).toMatchObject({ appended: [{ content: 'one' }, { content: 'theirs' }] });
  });
});
