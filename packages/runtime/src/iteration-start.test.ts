import { describe, expect, it } from 'vitest';
import { newRunId, type NewEvent } from '@agentloop/protocol';
import { useTestStore } from './test-support/test-store.js';
import { TEST_REQUEST, callsCheckpoint, runInModelCall } from './test-support/run-fixtures.js';

/** An iteration that goes on in the job that ran its batch's reads records them in its start: one step (real Redis). */
describe("startIteration with the batch's results (one step)", () => {
  const t = useTestStore('iteration-start');
  const started1: NewEvent[] = [{ type: 'run.started', data: {} }];
  const started: NewEvent[] = [
    { type: 'run.started', data: {} },
    { type: 'iteration.started', data: { iteration: 1 } },
  ];
  const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
  const read = (id: string, text: string) => ({
    callId: id,
    outcome: { status: 'completed' as const, content: text, result: text, durationMs: 1, executed: true },
    eventData: ev(id, 'completed'),
    unstarted: ev(id, 'running'),
    owner: '',
  });
  const next = {
    iteration: 2,
    expectPhase: 'tools',
    expectPendingFinal: '',
    callMode: 'tools',
    events: [{ type: 'iteration.started', data: { iteration: 2 } }] as NewEvent[],
    owner: 'job@A',
  };

  async function withCalls(ids: string[]): Promise<string> {
    const runId = await runInModelCall(t.store, started, 'job@A');
    await t.store.checkpoint(runId, callsCheckpoint(ids, 'local'));
    return runId;
  }

  it('records the results, then starts with them in the transcript, in one script', async () => {
    const runId = await withCalls(['r1', 'r2']);
    const steps: string[] = [];
    const run = t.store['scripts'].statusRun.bind(t.store['scripts']);
    t.store['scripts'].statusRun = ((...a: Parameters<typeof run>) => (steps.push(a[0]), run(...a))) as typeof run;
    const { started, recorded } = await t.store.startIterationRecording(runId, {
      ...next,
      expectBatch: ['r1', 'r2'],
      results: [read('r1', 'one'), read('r2', 'two')],
    });
    expect(recorded).toEqual(['recorded', 'recorded']);
    expect(started).toMatchObject({
      appended: [
        { role: 'tool', toolCallId: 'r1', content: 'one' },
        { role: 'tool', toolCallId: 'r2', content: 'two' },
      ],
    });
    expect(steps).toEqual(['startIteration']);
    const events = await t.store.events(runId);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(
      events
        .slice(-5)
        .map((e) =>
          e.type === 'tool.call'
            ? `${(e.data as { callId: string }).callId}:${(e.data as { status: string }).status}`
            : e.type,
        ),
    ).toEqual(['r1:running', 'r1:completed', 'r2:running', 'r2:completed', 'iteration.started']);
    expect((await t.store.load(runId))!.phase).toBe('model');
  });

  it('returns the whole transcript with the start when it is short enough (transcriptUpTo), else what it appended', async () => {
    const runId = await withCalls(['r1']);
    const { started } = await t.store.startIterationRecording(runId, {
      ...next,
      expectBatch: ['r1'],
      results: [read('r1', 'one')],
      transcriptUpTo: 3,
    });
    // the run's user message, iteration 1's response, the result the start appended: all of it, 3 long
    expect(started).toMatchObject({
      length: 3,
      appended: [{ role: 'user' }, { role: 'assistant' }, { role: 'tool', content: 'one' }],
    });
    const first = newRunId();
    await t.store.create({
      runId: first,
      tenant: 'T',
      request: TEST_REQUEST,
      messages: [
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ],
      bodyHash: 'h',
    });
    const start1 = { ...next, iteration: 1, expectPhase: 'queued', events: started1 };
    // over the count: nothing appended, nothing returned (the caller reads it)
    expect(await t.store.startIteration(first, { ...start1, transcriptUpTo: 1 })).toMatchObject({
      length: null,
      appended: [],
    });
  });

  it('a start refused still records what it carried; a call another delivery owns is neither recorded nor answered over', async () => {
    const runId = await withCalls(['r1', 'e1']);
    expect(await t.store.calls.markToolRunning(runId, 'e1', ev('e1', 'running'), 'job@B')).toBe('first'); // another delivery runs e1
    const owned = { ...read('e1', 'mine'), unstarted: undefined, owner: 'job@A' };
    const first = await t.store.startIterationRecording(runId, { ...next, results: [read('r1', 'one'), owned] });
    expect(first).toEqual({ started: 'waiting', recorded: ['recorded', 'stale'] }); // e1 is still open: no start over it
    expect((await t.store.calls.metaAndOutcomes(runId, ['r1', 'e1'])).map((o) => o.outcome?.content ?? null)).toEqual([
      'one',
      null,
    ]);
    const stale = await t.store.startIterationRecording(runId, {
      ...next,
      iteration: 3,
      results: [read('r1', 'again')],
    });
    expect(stale).toEqual({ started: 'stale', recorded: [null] }); // the duplicate changes nothing
    await t.store.calls.recordToolResult(
      runId,
      'e1',
      read('e1', 'theirs').outcome,
      ev('e1', 'completed'),
      undefined,
      'job@B',
    );
    expect(await t.store.startIteration(runId, next)).toMatchObject({
      appended: [{ content: 'one' }, { content: 'theirs' }],
    });
  });

  describe('behind its checkpoint, in one round trip (checkpointThenStart)', () => {
    const checkpoint = (ids: string[]) => callsCheckpoint(ids, 'local');
    async function inModelCall(owner = 'job@A'): Promise<string> {
      const runId = await runInModelCall(t.store, started, owner);
      return runId;
    }
    const outcomes = async (runId: string, ids: string[]) =>
      (await t.store.calls.metaAndOutcomes(runId, ids)).map((o) => o.outcome?.content ?? null);

    it('checkpoints iteration 1, records its reads and starts iteration 2', async () => {
      const runId = await inModelCall();
      const steps: string[] = [];
      const run = t.store['scripts'].statusRun.bind(t.store['scripts']);
      t.store['scripts'].statusRun = ((...a: Parameters<typeof run>) => (
        steps.push(`sent ${a[0]}`),
        run(...a).finally(() => steps.push(`answered ${a[0]}`))
      )) as typeof run;
      const r = await t.store.checkpointThenStart(runId, checkpoint(['r1', 'r2']), 'job@A', {
        ...next,
        results: [read('r1', 'one'), read('r2', 'two')],
      });
      expect(steps).toEqual([
        'sent checkpointResponse',
        'sent startIteration',
        'answered checkpointResponse',
        'answered startIteration',
      ]); // one round trip
      expect(r.checkpointed).toBe(true);
      expect(r.start.recorded).toEqual(['recorded', 'recorded']);
      expect(r.start.started).toMatchObject({
        length: 4,
        appended: [
          { toolCallId: 'r1', content: 'one' },
          { toolCallId: 'r2', content: 'two' },
        ],
      });
      expect(await t.store.load(runId)).toMatchObject({
        iteration: 2,
        phase: 'model',
        owner: 'job@A',
        usage: { toolCalls: 2 },
      });
      const events = await t.store.events(runId);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    });

    it('a checkpoint refused (another delivery took the call over and checkpointed it) leaves the start refused and its reads unrecorded', async () => {
      const runId = await inModelCall('job@B');
      expect(await t.store.checkpoint(runId, checkpoint(['r1']), 'job@B')).toBe(true); // the same call ids, by the owner
      const r = await t.store.checkpointThenStart(runId, checkpoint(['r1']), 'job@A', {
        ...next,
        results: [read('r1', 'mine')],
      });
      expect(r).toEqual({ checkpointed: false, start: { started: 'stale', recorded: [null] } });
      expect(await t.store.load(runId)).toMatchObject({ iteration: 1, phase: 'tools', owner: 'job@B' });
      expect(await outcomes(runId, ['r1'])).toEqual([null]); // the owner's call: not answered by the refused delivery
    });

    it('a start that reaches Redis before its checkpoint records nothing and is refused; after it, it applies', async () => {
      const runId = await inModelCall();
      const early = await t.store.startIterationRecording(runId, {
        ...next,
        results: [read('r1', 'one')],
        expectOwner: 'job@A',
      });
      expect(early).toEqual({ started: 'stale', recorded: [null] });
      expect(await t.store.checkpoint(runId, checkpoint(['r1']), 'job@A')).toBe(true);
      expect(await outcomes(runId, ['r1'])).toEqual([null]);
      const again = await t.store.startIterationRecording(runId, {
        ...next,
        results: [read('r1', 'one')],
        expectOwner: 'job@A',
      });
      expect(again.recorded).toEqual(['recorded']);
      expect(again.started).toMatchObject({ appended: [{ toolCallId: 'r1', content: 'one' }] });
    });
  });
});
