import { describe, expect, it } from 'vitest';
import {
  EventDataSchemas,
  EventEnvelopeSchema,
  argumentsForDisplay,
  iterationCompletedData,
  resumedDecision,
  runResumedData,
  toolCallData,
  toolErrorOutcome,
  wellFormedJson,
  type EventType,
  type NewEvent,
  type PendingCall,
  type ToolOutcome,
} from '@agentloop/protocol';
import { useTestStore } from './test-support/test-store.js';
import { CLOSED_CALLS } from './closed-calls.js';
import { eventLines } from './event-lines.js';
import { eventTemplate } from './event-templates.js';
import type { PreparedDecision } from './run-store-types.js';
import { TEST_TOTALS, runInModelCall } from './test-support/run-fixtures.js';

describe('event templates', () => {
  it('marks each slot once, whatever strings the data holds', () => {
    // a string of the data that equals a slot's stand-in, alone or after an escaped quote, is left as it is
    const data = (slot: <T>(name: string) => T) => ({
      b: '\u0001name\u0001',
      c: 'x"\u0001name\u0001',
      a: slot<string>('name'),
      d: slot<unknown>('display'),
    });
    const template = eventTemplate(data);
    expect(template).toBe(
      '{"b":"\\u0001name\\u0001","c":"x\\"\\u0001name\\u0001","a":\u0001name\u0001,"d":\u0001display\u0001}',
    );
  });

  it('refuses a slot its builder dropped, or used twice', () => {
    expect(() => eventTemplate((slot) => ({ a: slot('a') && 1 }))).toThrow(/slot a is not in the data/);
    expect(() => eventTemplate((slot) => ({ a: slot('a'), b: slot('a') }))).toThrow(/used twice/);
    expect(() => eventTemplate((slot) => ({ a: slot('a-b') }))).toThrow(/not alphanumeric/);
  });
});

/**
 * The events a script builds in its own step (from templates its TypeScript builders render) are the events those
 * builders make for the same values: read back through the real scripts, parsed by the protocol's schemas.
 */
describe('events the scripts fill in from TypeScript templates (real Redis)', () => {
  const t = useTestStore('event-templates');
  const totals = TEST_TOTALS;
  const usage = { promptTokens: 7, completionTokens: 3, totalTokens: 10, costUsd: 0.0125, llmCalls: 1 };
  // Lua pattern and replacement magic (% . [ ] ( ) ^ $), quotes, backslashes, unicode, a slot's stand-in, `[]` (which
  // cjson would turn into {}), a key order cjson would not keep
  const tricky = 'lo%1ok%%up "q" \\ é ✓ 😀 .[^$]() $& \u0001name\u0001 \u2028';
  const name = (i: number) => `${tricky} #${i}`;
  const rawArgs = (i: number) =>
    JSON.stringify({ z: i, q: tricky, list: [], nested: { b: [1, 2.5, -0], a: null }, pct: '%0 %1' });
  const shown = (id: string, i: number) => ({ callId: id, name: name(i), arguments: argumentsForDisplay(rawArgs(i)) });

  /** A run in iteration 1 with the calls `ids` checkpointed (paused with `pending`, when given). */
  async function withCalls(ids: string[], pending?: PendingCall[]): Promise<string> {
    const runId = await runInModelCall(t.store, [{ type: 'run.started', data: {} }]);
    const message = {
      role: 'assistant' as const,
      content: null,
      toolCalls: ids.map((id, i) => ({ id, name: name(i), arguments: rawArgs(i) })),
    };
    const calls = ids.map((id, i) => ({
      id,
      meta: {
        name: name(i),
        arguments: rawArgs(i),
        display: wellFormedJson(argumentsForDisplay(rawArgs(i))),
        pool: 'default',
        iteration: 1,
      },
      outcome: null,
    }));
    const pause = pending ? { pause: { pending, expiresAt: Date.now() + 60_000 } } : {};
    expect(
      await t.store.checkpoint(runId, {
        iteration: 1,
        message,
        totals,
        iterationUsage: usage,
        final: null,
        calls,
        pendingFinal: '',
        repeat: { fingerprint: '', count: 0 },
        events: [],
        ...pause,
      }),
    ).toBe(true);
    return runId;
  }

  /** The run's events of `type`, each checked against its schemas, as stored (raw) and parsed. */
  async function eventsOf(runId: string, type: EventType) {
    const raw = (await t.store.eventsRaw(runId)).events.filter((e) => JSON.parse(e).type === type);
    return raw.map((text) => {
      const ev = EventEnvelopeSchema.parse(JSON.parse(text));
      expect(ev.runId).toBe(runId);
      EventDataSchemas[type].parse(ev.data); // (checked, not used: a schema fills in defaults)
      return { text, ev, data: ev.data };
    });
  }

  /** The stored text is the envelope eventLines makes of `data` (same members, same order, same JSON). */
  const asTypeScriptBuilds = (e: { text: string; ev: { seq: number; at: string } }, runId: string, event: NewEvent) =>
    expect(e.text).toBe(`{"seq":${e.ev.seq}${eventLines(runId, e.ev.at, [event])}`);

  it.each(
    Object.keys(CLOSED_CALLS).filter((k) => k !== 'run_ended') as Array<
      Exclude<keyof typeof CLOSED_CALLS, 'run_ended'>
    >,
  )('tool.call of a call closed %s', async (kind) => {
    const runId = await withCalls(['x1']);
    expect(await t.store.calls.closeToolCall(runId, 'x1', kind)).toBe(true);
    const [e] = await eventsOf(runId, 'tool.call');
    const a = CLOSED_CALLS[kind];
    expect(e!.data).toEqual(toolCallData(shown('x1', 0), a.status, { status: a.status, error: a.error }));
  });

  it('a plain call closed: the same text as the TypeScript envelope', async () => {
    const runId = await runInModelCall(t.store, []);
    const meta = {
      name: 'lookup',
      arguments: '{"q":[],"n":1.5}',
      display: '{"q":[],"n":1.5}',
      pool: 'default',
      iteration: 1,
    };
    const message = {
      role: 'assistant' as const,
      content: null,
      toolCalls: [{ id: 'x1', name: 'lookup', arguments: meta.arguments }],
    };
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
    await t.store.calls.closeToolCall(runId, 'x1', 'cancelled');
    const [e] = await eventsOf(runId, 'tool.call');
    const a = CLOSED_CALLS.cancelled;
    asTypeScriptBuilds(e!, runId, {
      type: 'tool.call',
      data: toolCallData({ callId: 'x1', name: 'lookup', arguments: { q: [], n: 1.5 } }, a.status, {
        status: a.status,
        error: a.error,
      }),
    });
  });

  it('a run ending mid-batch: tool.call of each open call (run_ended), iteration.completed with the usage it read', async () => {
    const runId = await withCalls(['x1', 'x2']);
    await t.store.finish(runId, {
      expectIteration: 1,
      status: 'cancelled',
      stopReason: 'cancelled',
      error: null,
      events: [{ type: 'run.cancelled', data: { reason: 'stop' } }],
    });
    const a = CLOSED_CALLS.run_ended;
    expect((await eventsOf(runId, 'tool.call')).map((e) => e.data)).toEqual(
      ['x1', 'x2'].map((id, i) => toolCallData(shown(id, i), a.status, { status: a.status, error: a.error })),
    );
    const [done] = await eventsOf(runId, 'iteration.completed');
    asTypeScriptBuilds(done!, runId, { type: 'iteration.completed', data: iterationCompletedData(1, usage) });
  });

  it('a run ending during its model call: iteration.completed with usage {}', async () => {
    const runId = await runInModelCall(t.store, []);
    await t.store.finish(runId, {
      expectIteration: 1,
      status: 'failed',
      stopReason: null,
      error: { code: 'x', message: 'x' },
      events: [],
    });
    const [done] = await eventsOf(runId, 'iteration.completed');
    asTypeScriptBuilds(done!, runId, { type: 'iteration.completed', data: iterationCompletedData(1) });
  });

  it('a paused run cancelled: its calls closed run_ended and its iteration completed, in the same step', async () => {
    const runId = await withCalls(
      ['x1'],
      [{ callId: 'x1', name: name(0), arguments: {}, pauseType: 'awaiting_approval' }],
    );
    expect((await t.store.requestCancel(runId, 'stop')).kind).toBe('ended');
    const a = CLOSED_CALLS.run_ended;
    expect((await eventsOf(runId, 'tool.call'))[0]!.data).toEqual(
      toolCallData(shown('x1', 0), a.status, { status: a.status, error: a.error }),
    );
    expect((await eventsOf(runId, 'iteration.completed'))[0]!.data).toEqual(iterationCompletedData(1, usage));
  });

  it('decisions over two requests: each tool.call as its builder makes it, then run.resumed listing them all', async () => {
    const approval = (id: string, i: number): PendingCall => ({
      callId: id,
      name: name(i),
      arguments: {},
      pauseType: 'awaiting_approval',
    });
    const client = (id: string, i: number): PendingCall => ({
      callId: id,
      name: name(i),
      arguments: {},
      pauseType: 'requires_client_execution',
    });
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5', 'c6'];
    const runId = await withCalls(ids, [
      approval('c1', 0),
      approval('c2', 1),
      approval('c3', 2),
      client('c4', 3),
      client('c5', 4),
      client('c6', 5),
    ]);
    // (before the slot of its original arguments: a stand-in found by its first occurrence would be this string)
    const edited = { q: tricky, quoted: '"\u0001display\u0001', list: [], z: { y: [] } };
    const editedText = wellFormedJson(edited);
    const denied = toolErrorOutcome('denied', `Tool execution denied by user. Reason: ${tricky} "\u0001display\u0001`);
    const result = { text: '\u0001name\u0001', list: [], pct: '%1' };
    const completed: ToolOutcome = { status: 'completed', content: JSON.stringify(result), result };
    const bare: ToolOutcome = { status: 'completed', content: 'null' };
    const failed = toolErrorOutcome('tool_error', `client failed: ${tricky}`);
    const [meta1] = await t.store.calls.meta(runId, ['c2']);
    const decisions: PreparedDecision[] = [
      { callId: 'c1', action: 'approve', outcome: null, meta: null },
      { callId: 'c3', action: 'deny', outcome: denied, meta: null },
      {
        callId: 'c2',
        action: 'approve',
        outcome: null,
        meta: { ...meta1!, arguments: editedText, display: editedText },
        editedArguments: edited,
      },
      { callId: 'c4', action: 'submit_result', outcome: completed, meta: null },
      { callId: 'c5', action: 'submit_result', outcome: bare, meta: null },
      { callId: 'c6', action: 'submit_result', outcome: failed, meta: null },
    ];
    expect(
      await t.store.applyDecisions(runId, { tenant: 'T', decisions: decisions.slice(0, 2), edits: {} }),
    ).toMatchObject({ kind: 'waiting' });
    expect(
      await t.store.applyDecisions(runId, { tenant: 'T', decisions: decisions.slice(2), edits: { c2: editedText } }),
    ).toMatchObject({ kind: 'resumed' });

    const byId = new Map(
      (await eventsOf(runId, 'tool.call')).map((e) => [(e.data as { callId: string }).callId, e.data]),
    );
    expect(byId.get('c1')).toEqual(toolCallData(shown('c1', 0), 'approved'));
    expect(byId.get('c3')).toEqual(toolCallData(shown('c3', 2), 'denied', denied));
    expect(byId.get('c2')).toEqual(
      toolCallData({ ...shown('c2', 1), arguments: edited, originalArguments: shown('c2', 1).arguments }, 'approved'),
    );
    expect(byId.get('c4')).toEqual(toolCallData(shown('c4', 3), 'completed', completed));
    expect(byId.get('c5')).toEqual(toolCallData(shown('c5', 4), 'completed', bare));
    expect(byId.get('c6')).toEqual(toolCallData(shown('c6', 5), 'error', failed));
    expect(byId.get('c6')).toMatchObject({ error: failed.error });
    expect(byId.get('c4')).toMatchObject({ result });

    const resumed = await eventsOf(runId, 'run.resumed');
    expect(resumed).toHaveLength(1);
    const actions = ['approve', 'approve', 'deny', 'submit_result', 'submit_result', 'submit_result'];
    asTypeScriptBuilds(resumed[0]!, runId, {
      type: 'run.resumed',
      data: runResumedData(ids.map((id, i) => resumedDecision(id, actions[i]!))),
    });
  });
});
