import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { testRedisUrl } from '@agentloop/testing';
import { RunRequestSchema, canTransition, newRunId, type EventEnvelope } from '@agentloop/protocol';
import { checkEvents } from '@agentloop/testing';
import { RunStore } from './run-store.js';
import { useTestStore } from './test-support/test-store.js';
import { Scripts } from './scripts.js';
import { toSnapshot } from './run-state.js';

const discard = {
  type: 'llm.retry' as const,
  data: { provider: 'openai', model: 'm', attempt: 2, reason: 'worker_restarted', discardOutput: true },
};

describe('RunStore Lua transitions (real Redis)', () => {
  const t = useTestStore('store');
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  const create = async (over: Partial<Parameters<RunStore['create']>[0]> = {}) => {
    const runId = newRunId();
    await t.store.create({
      runId,
      tenant: 'T',
      request,
      messages: [{ role: 'user', content: 'hi' }],
      bodyHash: 'h',
      ...over,
    });
    return runId;
  };
  const toIteration1 = (runId: string) =>
    t.store.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [
        { type: 'run.started', data: {} },
        { type: 'iteration.started', data: { iteration: 1 } },
      ],
    });
  const totals = {
    promptTokens: 10,
    completionTokens: 5,
    reasoningTokens: 0,
    cachedTokens: 0,
    totalTokens: 15,
    costUsd: 0.001,
    llmCalls: 1,
  };
  const meta = (name: string) => ({ name, arguments: '{}', display: '{}', pool: 'default', iteration: 1 });

  it('keeps one run per idempotency key under 30 racing creates', async () => {
    const results = await Promise.all(
      Array.from({ length: 30 }, () =>
        t.store.create({
          runId: newRunId(),
          tenant: 'T',
          request,
          messages: [],
          bodyHash: 'same',
          idempotencyKey: 'k1',
        }),
      ),
    );
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => ('runId' in r ? r.runId : null))).size).toBe(1);
  });

  it("a checkpoint adds its call's usage to the stored totals: a summary billed while the model was called is kept", async () => {
    const runId = await create();
    await toIteration1(runId);
    const summary = {
      promptTokens: 100,
      completionTokens: 20,
      reasoningTokens: 0,
      cachedTokens: 0,
      totalTokens: 120,
      costUsd: 0.0005,
      llmCalls: 1,
    };
    expect(await t.store.addUsage(runId, summary)).toBe(true);
    await t.store.checkpoint(runId, {
      iteration: 1,
      message: { role: 'assistant', content: 'ok' },
      totals,
      billed: totals,
      iterationUsage: {},
      final: { stopReason: 'final_answer', output: 'ok' },
      calls: [],
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    expect((await t.store.load(runId))!.usage).toMatchObject({
      promptTokens: 110,
      completionTokens: 25,
      totalTokens: 135,
      llmCalls: 2,
      costUsd: 0.0015,
    });
  });

  it('starts an iteration exactly once when duplicate jobs race', async () => {
    const runId = await create();
    const results = await Promise.all(Array.from({ length: 20 }, () => toIteration1(runId)));
    expect(results.filter((r) => typeof r !== 'string')).toHaveLength(1);
    const st = await t.store.load(runId);
    expect(st).toMatchObject({ status: 'running', phase: 'model', iteration: 1 });
  });

  it('records a tool result once, appends the batch in call order, and keeps events gap-free', async () => {
    const runId = await create();
    await toIteration1(runId);
    const ok = await t.store.checkpoint(runId, {
      iteration: 1,
      message: {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'c1', name: 'a', arguments: '{}' },
          { id: 'c2', name: 'b', arguments: '{}' },
        ],
      },
      totals,
      billed: totals,
      iterationUsage: {},
      final: null,
      calls: [
        { id: 'c1', meta: meta('a'), outcome: null },
        { id: 'c2', meta: meta('b'), outcome: null },
      ],
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: ['c1', 'c2'].map((callId) => ({
        type: 'tool.call' as const,
        data: { callId, name: 'x', arguments: {}, status: 'proposed' as const },
      })),
    });
    expect(ok).toBe(true);
    expect(
      await t.store.checkpoint(runId, {
        iteration: 1,
        message: { role: 'assistant', content: 'dup' },
        totals,
        iterationUsage: {},
        final: null,
        calls: [],
        pendingFinal: '',
        repeat: { fingerprint: '', count: 0 },
        events: [],
      }),
    ).toBe(false);
    // c2 finishes first, c1 second; both get duplicate deliveries
    for (const id of ['c2', 'c1']) {
      expect((await t.store.calls.record(runId, id))!.status).toBe('queued');
      const outcome = { status: 'completed' as const, content: `result ${id}`, executed: true };
      const recs = await Promise.all(
        Array.from({ length: 10 }, () =>
          t.store.calls.recordToolResult(runId, id, outcome, {
            callId: id,
            name: 'x',
            arguments: {},
            status: 'completed',
          }),
        ),
      );
      expect(recs.filter(Boolean)).toHaveLength(1);
      expect((await t.store.calls.record(runId, id))!.status).toBe('done');
    }
    const started = await t.store.startIteration(runId, {
      iteration: 2,
      expectPhase: 'tools',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [],
    });
    if (typeof started === 'string') throw new Error(`start: ${started}`);
    expect(started.appended.map((m) => m.toolCallId)).toEqual(['c1', 'c2']);
    expect(started.length).toBe(4);
    const msgs = await t.store.messages(runId);
    expect(msgs.slice(-2)).toEqual([
      { role: 'tool', toolCallId: 'c1', content: 'result c1' },
      { role: 'tool', toolCallId: 'c2', content: 'result c2' },
    ]);
    const st = await t.store.load(runId);
    expect(st!.usage).toMatchObject({
      promptTokens: 10,
      completionTokens: 5,
      totalTokens: 15,
      llmCalls: 1,
      toolCalls: 2,
    });
    const events = await t.store.events(runId);
    expect(checkEvents(events as EventEnvelope[], { expectTerminal: false })).toEqual([]);
  });

  it('answers open calls cancelled when a run ends, and refuses events after the terminal one', async () => {
    const runId = await create();
    await toIteration1(runId);
    await t.store.checkpoint(runId, {
      iteration: 1,
      message: { role: 'assistant', content: null, toolCalls: [{ id: 'k1', name: 'a', arguments: '{"x":1}' }] },
      totals,
      iterationUsage: {},
      final: null,
      calls: [{ id: 'k1', meta: { ...meta('a'), display: '{"x":1}' }, outcome: null }],
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [{ type: 'tool.call', data: { callId: 'k1', name: 'a', arguments: { x: 1 }, status: 'proposed' } }],
    });
    expect(await t.store.requestCancel(runId, 'stop')).toEqual({ kind: 'requested', closed: [] });
    expect(
      await t.store.calls.markToolRunning(
        runId,
        'k1',
        { callId: 'k1', name: 'a', arguments: { x: 1 }, status: 'running' },
        'tool-job@t1',
      ),
    ).toBe('cancel'); // a tool-runner sees the cancellation
    expect(await t.store.calls.closeToolCall(runId, 'k1', 'cancelled')).toBe(true); // what a tool-runner does for a cancelled run
    expect(await t.store.calls.closeToolCall(runId, 'k1', 'cancelled')).toBe(false);
    expect(
      await t.store.finish(runId, {
        expectIteration: null,
        status: 'cancelled',
        stopReason: 'cancelled',
        error: null,
        events: [{ type: 'run.cancelled', data: { reason: 'stop' } }],
      }),
    ).toEqual({ closed: [] }); // k1 was answered already
    expect(
      await t.store.appendEvents(runId, null, [
        { type: 'llm.retry', data: { provider: 'p', model: 'm', attempt: 2, reason: 'x', discardOutput: false } },
      ]),
    ).toBe(false);
    expect((await t.store.requestCancel(runId, 'again')).kind).toBe('terminal');
    const msgs = await t.store.messages(runId);
    expect(JSON.parse(msgs.at(-1)!.content!)).toMatchObject({ ok: false, error: { code: 'cancelled' } });
    const events = await t.store.events(runId);
    expect(checkEvents(events as EventEnvelope[])).toEqual([]);
    expect(events.filter((e) => e.type === 'tool.call').map((e) => e.data.status)).toEqual(['proposed', 'cancelled']);
    expect(events.find((e) => e.data.status === 'cancelled')!.data.arguments).toEqual({ x: 1 });
  });

  it('lists a tenant’s runs newest first, filtered by status', async () => {
    const tenant = `L${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await create({ tenant }));
      await new Promise((r) => setTimeout(r, 2));
    }
    await toIteration1(ids[1]!);
    const page = await t.store.listRuns(tenant, { limit: 2 });
    expect(page.runs.map((r) => r.id)).toEqual([ids[4], ids[3]]);
    expect(page.nextCursor).toEqual({ runId: ids[3], score: Date.parse(page.runs[1]!.createdAt) });
    const rest = await t.store.listRuns(tenant, { limit: 3, cursor: page.nextCursor });
    expect(rest.runs.map((r) => r.id)).toEqual([ids[2], ids[1], ids[0]]);
    expect(rest.nextCursor).toBeNull();
    const running = await t.store.listRuns(tenant, { limit: 10, status: 'running' });
    expect(running.runs.map((r) => r.id)).toEqual([ids[1]]);
  });

  it('takes thousands of input calls, a response with thousands of calls, and ends such a run (no unpack limit)', async () => {
    const n = 5000;
    const input = [
      { role: 'user' as const, content: 'hi' },
      {
        role: 'assistant' as const,
        content: null,
        toolCalls: Array.from({ length: n }, (_, i) => ({ id: `in_${i}`, name: 'a', arguments: '{}' })),
      },
      ...Array.from({ length: n }, (_, i) => ({ role: 'tool' as const, toolCallId: `in_${i}`, content: 'ok' })),
      { role: 'user' as const, content: 'go' },
    ];
    const runId = await create({ messages: input });
    expect((await t.store.messages(runId)).length).toBe(n + 3);
    await toIteration1(runId);
    const calls = Array.from({ length: 3000 }, (_, i) => ({ id: `c_${i}`, meta: meta('a'), outcome: null }));
    const ok = await t.store.checkpoint(runId, {
      iteration: 1,
      message: {
        role: 'assistant',
        content: null,
        toolCalls: calls.map((c) => ({ id: c.id, name: 'a', arguments: '{}' })),
      },
      totals,
      iterationUsage: {},
      final: null,
      calls,
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: calls.map((c) => ({
        type: 'tool.call' as const,
        data: { callId: c.id, name: 'a', arguments: {}, status: 'proposed' },
      })),
    });
    expect(ok).toBe(true);
    const ended = await t.store.finish(runId, {
      expectIteration: null,
      status: 'failed',
      stopReason: null,
      error: { code: 'x', message: 'y' },
      events: [{ type: 'run.failed', data: { error: { code: 'x', message: 'y' } } }],
    });
    expect(ended?.closed).toHaveLength(3000);
    const events = await t.store.events(runId);
    expect(checkEvents(events as EventEnvelope[])).toEqual([]);
    expect(events.filter((e) => e.data.status === 'cancelled')).toHaveLength(3000);
  });

  it('refuses a transition the table does not list, before writing anything', async () => {
    const runId = await create();
    const before = await t.redis.hgetall(t.store.keys.run(runId).state);
    const events = await t.store.events(runId);
    // queued → completed is not a transition (a run completes only from running); endRun takes terminal targets only
    await expect(
      t.store.finish(runId, {
        expectIteration: null,
        status: 'completed',
        stopReason: 'final_answer',
        error: null,
        events: [],
      }),
    ).rejects.toThrow(/ILLEGAL_TRANSITION .*queued -> completed/);
    await expect(
      t.store.finish(runId, {
        expectIteration: null,
        status: 'paused' as 'failed',
        stopReason: null,
        error: null,
        events: [],
      }),
    ).rejects.toThrow(/paused is not a terminal status/);
    expect(await t.redis.hgetall(t.store.keys.run(runId).state)).toEqual(before);
    expect(await t.store.events(runId)).toEqual(events);
    expect(canTransition('created', 'completed')).toBe(false);
    expect(canTransition('paused', 'running')).toBe(true);
    expect(canTransition('completed', 'running')).toBe(false);
  });

  it("notifies the run's channel only while a client holds its watch lease (and never recreates a gone run)", async () => {
    const runId = await create();
    await toIteration1(runId);
    const sub = new Redis(testRedisUrl());
    const got: string[] = [];
    sub.on('message', (_ch: string, seq: string) => got.push(seq));
    await sub.subscribe(t.store.keys.run(runId).eventsChannel);
    try {
      const delta = { type: 'message.delta' as const, data: { iteration: 1, text: 'a' } };
      expect(await t.store.appendEvents(runId, 1, [delta])).toBe(true);
      expect(await t.store.watch(runId, Date.now() + 10_000)).toBe(true);
      expect(await t.store.appendEvents(runId, 1, [delta, delta])).toBe(true);
      expect(await t.store.watch(runId, Date.now() - 1)).toBe(true); // a lapsed lease
      expect(await t.store.appendEvents(runId, 1, [delta])).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
      const seqs = (await t.store.events(runId)).map((e) => e.seq);
      expect(got).toEqual([String(seqs[seqs.length - 2])]); // only the write made while watched, with its last seq
      expect(await t.store.watch('run_gone', Date.now() + 10_000)).toBe(false);
      expect(await t.redis.exists(t.store.keys.run('run_gone').state)).toBe(0);
    } finally {
      sub.disconnect();
    }
  });

  it('records a read call without a start step: running then its result in one step, or cancelled / skipped instead', async () => {
    const withCall = async (over: Partial<Parameters<RunStore['create']>[0]> = {}) => {
      const runId = await create(over);
      await toIteration1(runId);
      await t.store.checkpoint(runId, {
        iteration: 1,
        message: { role: 'assistant', content: null, toolCalls: [{ id: 'r1', name: 'a', arguments: '{}' }] },
        totals,
        iterationUsage: {},
        final: null,
        calls: [{ id: 'r1', meta: meta('a'), outcome: null }],
        pendingFinal: '',
        repeat: { fingerprint: '', count: 0 },
        events: [],
      });
      return runId;
    };
    const done = {
      status: 'completed' as const,
      content: '{"ok":true}',
      result: { ok: true },
      durationMs: 1,
      executed: true,
    };
    const data = (status: 'running' | 'completed') => ({ callId: 'r1', name: 'a', arguments: {}, status });
    const ok = await withCall();
    expect(await t.store.calls.recordToolResult(ok, 'r1', done, data('completed'), data('running'))).toBe('recorded');
    expect((await t.store.events(ok)).slice(-2).map((e) => (e.data as { status: string }).status)).toEqual([
      'running',
      'completed',
    ]);
    expect(await t.store.calls.recordToolResult(ok, 'r1', done, data('completed'), data('running'))).toBeNull(); // a duplicate delivery
    const cancelled = await withCall();
    await t.store.requestCancel(cancelled, 'stop');
    expect(await t.store.calls.recordToolResult(cancelled, 'r1', done, data('completed'), data('running'))).toBe(
      'cancelled',
    );
    expect((await t.store.calls.metaAndOutcomes(cancelled, ['r1']))[0]!.outcome).toMatchObject({ status: 'cancelled' });
    const late = await withCall({ request: RunRequestSchema.parse({ ...request, limits: { maxWallMs: 1 } }) });
    await new Promise((r) => setTimeout(r, 5));
    expect(await t.store.calls.recordToolResult(late, 'r1', done, data('completed'), data('running'))).toBe('skipped');
    expect(await t.store.load(late)).toMatchObject({ pendingFinal: 'budget_exceeded' });
  });

  it("says, from the record step's own read, whether a batch without a flow parent is all answered (ToolJob.batch)", async () => {
    const runId = await create();
    await toIteration1(runId);
    const calls = ['b1', 'b2', 'b3'].map((id) => ({ id, meta: meta('a'), outcome: null }));
    await t.store.checkpoint(runId, {
      iteration: 1,
      message: {
        role: 'assistant',
        content: null,
        toolCalls: calls.map((c) => ({ id: c.id, name: 'a', arguments: '{}' })),
      },
      totals,
      iterationUsage: {},
      final: null,
      calls,
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    const done = { status: 'completed' as const, content: 'ok', result: 'ok', durationMs: 1, executed: true };
    const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
    const record = (id: string) =>
      t.store.calls.recordBatchedToolResult(
        runId,
        id,
        done,
        ev(id, 'completed'),
        ev(id, 'running'),
        '',
        ['b1', 'b2', 'b3'].filter((o) => o !== id),
      );
    expect(await record('b2')).toEqual({ answer: 'recorded', batchAnswered: false });
    expect(await t.store.calls.closeToolCall(runId, 'b3', 'job_failed')).toBe(true); // answered without running: counts as answered
    expect(await t.store.calls.allAnswered(runId, ['b1', 'b2', 'b3'])).toBe(false);
    expect(await record('b1')).toEqual({ answer: 'recorded', batchAnswered: true }); // the last one
    expect(await record('b1')).toEqual({ answer: null, batchAnswered: null }); // a duplicate delivery reads the batch itself
    expect(await t.store.calls.allAnswered(runId, ['b1', 'b2', 'b3'])).toBe(true);
  });

  it('fences a delivery that lost the model call: after a claim, its deltas and its checkpoint are refused', async () => {
    const runId = await create();
    await t.store.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [],
      owner: 'r-1@first',
    });
    const delta = { type: 'message.delta' as const, data: { iteration: 1, text: 'x' } };
    expect(await t.store.appendEvents(runId, 1, [delta], true, 'r-1@first')).toBe(true);
    expect(await t.store.claimModelCall(runId, 1, 'r-1@first', 'r-1@second', discard)).toEqual({ discarded: true });
    expect(await t.store.claimModelCall(runId, 1, 'r-1@first', 'r-1@third', discard)).toBeNull(); // one claim wins
    expect(await t.store.appendEvents(runId, 1, [delta], false, 'r-1@first')).toBe(false);
    const answer = {
      iteration: 1,
      message: { role: 'assistant' as const, content: 'late' },
      totals,
      iterationUsage: {},
      final: { stopReason: 'final_answer' as const, output: 'late' },
      calls: [],
      pendingFinal: '' as const,
      repeat: { fingerprint: '', count: 0 },
      events: [],
    };
    expect(await t.store.checkpoint(runId, answer, 'r-1@first')).toBe(false);
    expect(await t.store.appendEvents(runId, 1, [delta], false, 'r-1@second')).toBe(true);
    expect(
      await t.store.checkpoint(
        runId,
        {
          ...answer,
          message: { role: 'assistant', content: 'ok' },
          final: { stopReason: 'final_answer', output: 'ok' },
        },
        'r-1@second',
      ),
    ).toBe(true);
    expect((await t.store.load(runId))!.output).toBe('ok');
    const events = await t.store.events(runId);
    // the claim itself told clients to drop the first delivery's deltas: nothing of it can come after that event
    expect(events.filter((e) => e.type === 'message.delta' || e.type === 'llm.retry').map((e) => e.type)).toEqual([
      'message.delta',
      'llm.retry',
      'message.delta',
    ]);
  });

  it('a claim of a model call that sent no deltas yet tells clients nothing, and a delivery that lost its model call cannot end the run', async () => {
    const runId = await create();
    await t.store.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [],
      owner: 'r-1@first',
    });
    expect(await t.store.claimModelCall(runId, 1, 'r-1@first', 'r-1@second', discard)).toEqual({ discarded: false });
    const error = { code: 'llm_server', message: 'every model failed' };
    const fail = (owner: string) =>
      t.store.finish(runId, {
        expectIteration: 1,
        status: 'failed',
        stopReason: null,
        error,
        events: [{ type: 'run.failed', data: { error } }],
        owner,
      });
    expect(await fail('r-1@first')).toBeNull(); // its last attempt failed while the new owner streams: nothing ends
    expect((await t.store.load(runId))!.status).toBe('running');
    expect((await t.store.events(runId)).some((e) => e.type === 'llm.retry' || e.type === 'run.failed')).toBe(false);
    expect(await fail('r-1@second')).toEqual({ closed: [] });
    expect((await t.store.load(runId))!.status).toBe('failed');
  });

  it('fences tool calls by owner: a stale delivery records nothing, a redelivery takes a safe call over or answers a never call once', async () => {
    const runId = await create();
    await toIteration1(runId);
    const calls = ['t1', 't2'].map((id) => ({ id, meta: meta('a'), outcome: null }));
    await t.store.checkpoint(runId, {
      iteration: 1,
      message: {
        role: 'assistant',
        content: null,
        toolCalls: calls.map((c) => ({ id: c.id, name: 'a', arguments: '{}' })),
      },
      totals,
      iterationUsage: {},
      final: null,
      calls,
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
    const result = (text: string) => ({
      status: 'completed' as const,
      content: text,
      result: text,
      durationMs: 1,
      executed: true,
    });
    // t1 (retry safe): delivery A starts it and stalls; B, holding the job now, takes it over and runs it again
    expect(await t.store.calls.markToolRunning(runId, 't1', ev('t1', 'running'), 'job1@A')).toBe('first');
    expect(await t.store.calls.markToolRunning(runId, 't1', ev('t1', 'running'), 'job1@A')).toBe('first'); // its own start again: no second event
    expect(await t.store.calls.markToolRunning(runId, 't1', ev('t1', 'running'), 'job1@B')).toEqual({
      owned: 'job1@A',
    });
    expect(await t.store.calls.markToolRunning(runId, 't1', ev('t1', 'running'), 'job1@B', 'job1@X')).toEqual({
      owned: 'job1@A',
    }); // a take-over names whom it takes from
    expect(await t.store.calls.markToolRunning(runId, 't1', ev('t1', 'running'), 'job1@B', 'job1@A')).toBe('taken');
    expect(
      await t.store.calls.recordToolResult(runId, 't1', result('from A'), ev('t1', 'completed'), undefined, 'job1@A'),
    ).toBe('stale'); // A wakes up
    expect(
      await t.store.calls.recordToolResult(runId, 't1', result('from B'), ev('t1', 'completed'), undefined, 'job1@B'),
    ).toBe('recorded');
    expect(
      await t.store.calls.recordToolResult(runId, 't1', result('from A'), ev('t1', 'completed'), undefined, 'job1@A'),
    ).toBe('stale');
    expect(
      await t.store.calls.recordToolResult(runId, 't1', result('from B'), ev('t1', 'completed'), undefined, 'job1@B'),
    ).toBeNull(); // a duplicate
    // t2 (retry never): A starts it; B answers it outcome_unknown only while A is the owner it saw
    expect(await t.store.calls.markToolRunning(runId, 't2', ev('t2', 'running'), 'job2@A')).toBe('first');
    expect(await t.store.calls.closeToolCall(runId, 't2', 'outcome_unknown', { seen: 'job2@Z', by: 'job2@B' })).toBe(
      false,
    );
    expect(await t.store.calls.closeToolCall(runId, 't2', 'outcome_unknown', { seen: 'job2@A', by: 'job2@B' })).toBe(
      true,
    );
    expect(
      await t.store.calls.recordToolResult(runId, 't2', result('late'), ev('t2', 'completed'), undefined, 'job2@A'),
    ).toBe('stale'); // the stalled delivery's result changes nothing
    expect(
      await t.store.calls.recordToolResult(runId, 't2', result('dup'), ev('t2', 'completed'), undefined, 'job2@B'),
    ).toBeNull();
    const outs = await t.store.calls.metaAndOutcomes(runId, ['t1', 't2']);
    expect(outs.map((o) => o.outcome?.content)).toEqual(['from B', expect.stringContaining('outcome_unknown')]);
    const statuses = (await t.store.events(runId))
      .filter((e) => e.type === 'tool.call')
      .map((e) => `${(e.data as { callId: string }).callId}:${(e.data as { status: string }).status}`);
    expect(statuses).toEqual(['t1:running', 't1:completed', 't2:running', 't2:error']);
  });

  it('records a batch of local results in one step, each call checked on its own: recorded, stale under another owner, a duplicate, cancelled', async () => {
    const withCalls = async (ids: string[]) => {
      const runId = await create();
      await toIteration1(runId);
      const calls = ids.map((id) => ({ id, meta: meta('a'), outcome: null }));
      await t.store.checkpoint(runId, {
        iteration: 1,
        message: { role: 'assistant', content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) },
        totals,
        iterationUsage: {},
        final: null,
        calls,
        pendingFinal: '',
        repeat: { fingerprint: '', count: 0 },
        events: [],
      });
      return runId;
    };
    const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
    const result = (text: string) => ({
      status: 'completed' as const,
      content: text,
      result: text,
      durationMs: 1,
      executed: true,
    });
    const read = (id: string, text: string) => ({
      callId: id,
      outcome: result(text),
      eventData: ev(id, 'completed'),
      unstarted: ev(id, 'running'),
      owner: '',
    });
    const owned = (id: string, text: string, owner: string) => ({
      callId: id,
      outcome: result(text),
      eventData: ev(id, 'completed'),
      owner,
    });
    const runId = await withCalls(['r1', 'e1', 'e2', 'r2']);
    expect(await t.store.calls.markToolRunning(runId, 'e1', ev('e1', 'running'), 'job@A')).toBe('first');
    expect(await t.store.calls.markToolRunning(runId, 'e2', ev('e2', 'running'), 'job@B')).toBe('first'); // another delivery took e2
    await t.store.calls.recordToolResult(runId, 'r2', result('before'), ev('r2', 'completed'), ev('r2', 'running')); // r2 answered already
    const seq0 = (await t.store.events(runId)).length;
    expect(
      await t.store.calls.recordToolResults(runId, [
        read('r1', 'one'),
        owned('e1', 'two', 'job@A'),
        owned('e2', 'three', 'job@A'),
        read('r2', 'again'),
      ]),
    ).toEqual(['recorded', 'recorded', 'stale', null]);
    const outs = await t.store.calls.metaAndOutcomes(runId, ['r1', 'e1', 'e2', 'r2']);
    expect(outs.map((o) => o.outcome?.content ?? null)).toEqual(['one', 'two', null, 'before']);
    const after = (await t.store.events(runId))
      .slice(seq0)
      .map((e) => `${(e.data as { callId: string }).callId}:${(e.data as { status: string }).status}`);
    expect(after).toEqual(['r1:running', 'r1:completed', 'e1:completed']); // in batch order, one step
    expect(await t.store.calls.recordToolResults(runId, [read('r1', 'dup'), owned('e1', 'dup', 'job@A')])).toEqual([
      null,
      null,
    ]); // a duplicate delivery
    const all = await t.store.events(runId);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1)); // gap-free, nothing added by the duplicate
    expect(all.length).toBe(seq0 + 3);
    const cancelled = await withCalls(['r1', 'r2']);
    await t.store.requestCancel(cancelled, 'stop');
    expect(await t.store.calls.recordToolResults(cancelled, [read('r1', 'x'), read('r2', 'y')])).toEqual([
      'cancelled',
      'cancelled',
    ]);
    expect((await t.store.calls.metaAndOutcomes(cancelled, ['r1', 'r2'])).map((o) => o.outcome?.status)).toEqual([
      'cancelled',
      'cancelled',
    ]);
  });

  it('records a batch whose results exceed the step size in several steps, every call recorded, in order', async () => {
    const ids = ['c1', 'c2', 'c3', 'c4', 'c5'];
    const runId = await create();
    await toIteration1(runId);
    await t.store.checkpoint(runId, {
      iteration: 1,
      message: { role: 'assistant', content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) },
      totals,
      iterationUsage: {},
      final: null,
      calls: ids.map((id) => ({ id, meta: meta('a'), outcome: null })),
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    const ev = (id: string, status: 'running' | 'completed') => ({ callId: id, name: 'a', arguments: {}, status });
    const big = (id: string) => 'x'.repeat(10_000) + id;
    const batch = ids.map((id) => ({
      callId: id,
      outcome: { status: 'completed' as const, content: big(id), result: big(id), durationMs: 1, executed: true },
      eventData: ev(id, 'completed'),
      unstarted: ev(id, 'running'),
      owner: '',
    }));
    const steps: number[] = [];
    const scripts = (t.store as unknown as { scripts: { run: (...a: unknown[]) => Promise<unknown> } }).scripts;
    const run = scripts.run.bind(scripts);
    scripts.run = (...a) => (a[0] === 'recordToolResults' && steps.push(1), run(...a));
    try {
      expect(await t.store.calls.recordToolResults(runId, batch, 100_000)).toEqual(ids.map(() => 'recorded'));
    } finally {
      scripts.run = run;
    }
    expect(steps.length).toBe(3); // ~41 KB an entry: two a step
    expect((await t.store.calls.metaAndOutcomes(runId, ids)).map((o) => o.outcome?.content)).toEqual(ids.map(big));
    const statuses = (await t.store.events(runId))
      .filter((e) => e.type === 'tool.call')
      .map((e) => `${(e.data as { callId: string }).callId}:${(e.data as { status: string }).status}`);
    expect(statuses).toEqual(ids.flatMap((id) => [`${id}:running`, `${id}:completed`]));
  });

  it('a checkpoint sets its target status itself: status, phase or any field outside its list is refused whole', async () => {
    const runId = await create();
    await toIteration1(runId);
    const k = t.store.keys.run(runId);
    const keys = t.store.keys.runStatusScript(runId, 'T', '');
    const head = [runId, new Date().toISOString(), String(Date.now()), k.eventsChannel, ''];
    const before = await t.redis.hgetall(k.state);
    const scripts = new Scripts(t.redis);
    for (const field of ['status', 'phase', 'tenant', 'owner'])
      await expect(
        scripts.run('checkpointResponse', keys, [
          ...head,
          1,
          '{"role":"assistant","content":"x"}',
          'tools',
          JSON.stringify([field, 'completed']),
          '[]',
          '',
          '',
        ]),
      ).rejects.toThrow(/not a field a checkpoint sets/);
    await expect(
      scripts.run('checkpointResponse', keys, [
        ...head,
        1,
        '{"role":"assistant","content":"x"}',
        'done',
        '[]',
        '[]',
        '',
        '',
      ]),
    ).rejects.toThrow(/unknown target/);
    await expect(scripts.run('checkpointResponse', keys.slice(0, 10), [...head])).rejects.toThrow(/takes 18 keys/);
    expect(await t.redis.hgetall(k.state)).toEqual(before);
  });

  it('structured output: a checkpoint records the repair turn, then the answer with outputJson (or the failure), each parsed back', async () => {
    const structured = RunRequestSchema.parse({
      input: 'hi',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      output: { schema: { type: 'object' } },
    });
    const runId = await create({ request: structured });
    await toIteration1(runId);
    const base = { totals, iterationUsage: {}, calls: [], repeat: { fingerprint: '', count: 0 } };
    const repair = { iteration: 2, message: 'fix: /a must be string' };
    expect(
      await t.store.checkpoint(runId, {
        ...base,
        iteration: 1,
        message: { role: 'assistant', content: 'nope' },
        final: null,
        pendingFinal: '',
        events: [],
        outputRepair: repair,
      }),
    ).toBe(true);
    expect(await t.store.load(runId)).toMatchObject({
      phase: 'tools',
      batch: [],
      outputRepair: repair,
      outputJson: undefined,
    });
    const started = await t.store.startIteration(runId, {
      iteration: 2,
      expectPhase: 'tools',
      expectPendingFinal: '',
      callMode: 'tools',
      extraMessage: { role: 'user', content: repair.message },
      events: [],
    });
    expect(started).toMatchObject({ appended: [{ role: 'user', content: repair.message }] });
    const final = { stopReason: 'final_answer' as const, output: '{"a":"x"}', outputJson: { a: 'x' } };
    const done = {
      type: 'run.completed' as const,
      data: {
        output: final.output,
        outputJson: final.outputJson,
        stopReason: final.stopReason,
        iterations: 2,
        usage: { ...totals, toolCalls: 0 },
      },
    };
    expect(
      await t.store.checkpoint(runId, {
        ...base,
        iteration: 2,
        message: { role: 'assistant', content: final.output },
        final,
        pendingFinal: '',
        events: [done],
      }),
    ).toBe(true);
    const st = (await t.store.load(runId))!;
    expect(toSnapshot(st)).toMatchObject({ status: 'completed', output: '{"a":"x"}', outputJson: { a: 'x' } });
    expect((await t.store.events(runId)).at(-1)!.data).toMatchObject({ outputJson: { a: 'x' } });
    expect(toSnapshot((await t.store.load(await create()))!)).not.toHaveProperty('outputJson'); // only runs with output.schema

    const failing = await create({ request: structured });
    await toIteration1(failing);
    const error = { code: 'output_invalid', message: 'still invalid' };
    expect(
      await t.store.checkpoint(failing, {
        ...base,
        iteration: 1,
        message: { role: 'assistant', content: 'nope' },
        final: null,
        failure: error,
        pendingFinal: '',
        events: [{ type: 'run.failed', data: { error } }],
      }),
    ).toBe(true);
    expect(toSnapshot((await t.store.load(failing))!)).toMatchObject({
      status: 'failed',
      stopReason: null,
      error,
      outputJson: null,
    });
    expect((await t.store.messages(failing)).at(-1)).toEqual({ role: 'assistant', content: 'nope' }); // the answer is recorded

    await t.redis.hset(t.store.keys.run(failing).state, 'outputRepair', '{"iteration":"two"}');
    await expect(t.store.load(failing)).rejects.toThrow(/state field outputRepair/);
  });

  it('parses every enum field of the state, never casts: an unknown value is reported, not passed on', async () => {
    const runId = await create();
    await t.redis.hset(t.store.keys.run(runId).state, 'callMode', 'bogus_mode');
    await expect(t.store.load(runId)).rejects.toThrow(/state field callMode holds 'bogus_mode'/);
    await t.redis.hset(t.store.keys.run(runId).state, 'callMode', 'max_iterations', 'status', 'exploded');
    await expect(t.store.load(runId)).rejects.toThrow(/state field status/);
  });
});
