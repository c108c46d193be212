import { describe, expect, it } from 'vitest';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';

import { useTestStore } from './test-support/test-store.js';
import { RunStore } from './run-store.js';
import { RUN_LAYOUT, STATE_FIELDS, parseRunState } from './run-state.js';
import { runInModelCall } from './test-support/run-fixtures.js';

/**
 * The state hash layout (lua/common.lua): a run's calls and its events are fields of its state hash, so one step reads
 * and writes the run, its calls and its events in one command each. Runs of the layouts of earlier builds are refused.
 */
describe('run state layout (real Redis)', () => {
  const t = useTestStore('layout');
  const { prefix } = t;
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
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
  const started: NewEvent[] = [
    { type: 'run.started', data: {} },
    { type: 'iteration.started', data: { iteration: 1 } },
  ];
  const outcome = (text: string) => ({ status: 'completed' as const, content: text, executed: true });
  const running = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'running' as const });
  const done = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'completed' as const });

  /** A run at iteration 1 with `ids` dispatched (phase tools). */
  async function withBatch(ids: string[]): Promise<string> {
    const runId = newRunId();
    await t.store.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    expect(
      await t.store.startIteration(runId, {
        iteration: 1,
        expectPhase: 'queued',
        expectPendingFinal: '',
        callMode: 'tools',
        events: started,
      }),
    ).toMatchObject({ length: null, toolCalls: 0 });
    const calls = ids.map((id) => ({ id, meta: meta('a'), outcome: null }));
    const message = {
      role: 'assistant' as const,
      content: null,
      toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })),
    };
    expect(
      await t.store.checkpoint(runId, {
        iteration: 1,
        message,
        totals,
        iterationUsage: {},
        final: null,
        calls,
        pendingFinal: '',
        repeat: { fingerprint: '', count: 0 },
        events: [],
      }),
    ).toBe(true);
    return runId;
  }

  it('STATE_FIELDS lists every field parseRunState reads (a run is read by HMGET of them)', () => {
    const read = new Set<string>();
    const h = new Proxy({ id: 'r', status: 'completed', phase: 'done' } as Record<string, string>, {
      get: (t, f) => (typeof f === 'string' && read.add(f), Reflect.get(t, f)),
    });
    parseRunState(h);
    expect(read.size).toBeGreaterThan(30);
    expect([...read].filter((f) => !(STATE_FIELDS as readonly string[]).includes(f))).toEqual([]);
  });

  it('keeps the calls in the state hash, and a read of the run never carries them', async () => {
    const ids = Array.from({ length: 300 }, (_, i) => `c${i}`);
    const runId = await withBatch(ids);
    for (const id of ids.slice(0, 50))
      expect(await t.store.calls.recordToolResult(runId, id, outcome('x'.repeat(2000)), done(id), running(id))).toBe(
        'recorded',
      );
    const k = t.store.keys.run(runId);
    expect(await t.redis.hget(k.state, 'c:c7:st')).toBe('done');
    expect(await t.store.calls.record(runId, 'c7')).toMatchObject({
      status: 'done',
      meta: { name: 'a' },
      outcome: { content: 'x'.repeat(2000) },
    });
    expect(await t.store.calls.answered(runId, 'c299')).toBe(false);
    expect(await t.store.calls.answered(runId, 'unknown')).toBe(true);
    expect(
      (await t.store.calls.metaAndOutcomes(runId, ['c7', 'c299'])).map((r) => [
        r.meta?.name,
        r.outcome?.content.length ?? null,
      ]),
    ).toEqual([
      ['a', 2000],
      ['a', null],
    ]);
    const st = (await t.store.load(runId))!;
    expect(st).toMatchObject({ id: runId, status: 'running', phase: 'tools', batch: ids });
    expect(await t.redis.hlen(k.state)).toBeGreaterThan(STATE_FIELDS.length + 300); // the calls are there, but not read by load()
    const { runs } = await t.store.listRuns('T', { limit: 5 });
    expect(runs.map((r) => r.id)).toContain(runId);
  });

  it('starts the next iteration the same with a right, a wrong or no guess of the batch', async () => {
    const appended = [];
    for (const guess of [['a1', 'a2'], ['zz'], undefined]) {
      const runId = await withBatch(['a1', 'a2']);
      for (const id of ['a2', 'a1'])
        await t.store.calls.recordToolResult(runId, id, outcome(`r-${id}`), done(id), running(id));
      const r = await t.store.startIteration(runId, {
        iteration: 2,
        expectPhase: 'tools',
        expectPendingFinal: '',
        callMode: 'tools',
        events: [],
        expectBatch: guess,
        returnState: true,
      });
      if (typeof r === 'string') throw new Error(r);
      appended.push(r.appended);
      // the state a start returns (its first read, with what it wrote over it) is the state in Redis
      expect(r.state).toEqual(await t.store.load(runId));
      expect(r.state).toMatchObject({ iteration: 2, phase: 'model', batch: [], usage: { toolCalls: 2 } });
    }
    expect(appended[0]).toEqual([
      { role: 'tool', toolCallId: 'a1', content: 'r-a1' },
      { role: 'tool', toolCallId: 'a2', content: 'r-a2' },
    ]);
    expect(appended[1]).toEqual(appended[0]);
    expect(appended[2]).toEqual(appended[0]);
  });

  it('keeps the events in the state hash; they read back in order, page by page, and expire with the run', async () => {
    const runId = await runInModelCall(t.store, started);
    expect(await t.store.appendEvents(runId, 1, [{ type: 'message.delta', data: { iteration: 1, text: 'a' } }])).toBe(
      true,
    );
    const message = {
      role: 'assistant' as const,
      content: null,
      toolCalls: [{ id: 'x1', name: 'a', arguments: '{}' }],
    };
    await t.store.checkpoint(runId, {
      iteration: 1,
      message,
      totals,
      iterationUsage: {},
      final: null,
      calls: [{ id: 'x1', meta: meta('a'), outcome: null }],
      pendingFinal: '',
      repeat: { fingerprint: '', count: 0 },
      events: [],
    });
    expect(await t.store.calls.recordToolResult(runId, 'x1', outcome('one'), done('x1'), running('x1'))).toBe(
      'recorded',
    );
    expect(
      await t.store.finish(runId, {
        expectIteration: 1,
        status: 'cancelled',
        stopReason: 'cancelled',
        error: null,
        events: [{ type: 'run.cancelled', data: { reason: 'test' } }],
      }),
    ).toEqual({ closed: [] });
    const k = t.store.keys.run(runId);
    const all = await t.store.events(runId);
    expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
    expect(all.map((e) => e.type)).toEqual([
      'run.queued',
      'run.started',
      'iteration.started',
      'message.delta',
      'tool.call',
      'tool.call',
      'iteration.completed',
      'run.cancelled',
    ]);
    expect(await t.store.events(runId, 3)).toEqual(all.slice(3));
    expect(await t.store.events(runId, all.length)).toEqual([]);
    expect(await t.redis.hget(k.state, 'lay')).toBe(RUN_LAYOUT);
    expect(JSON.parse((await t.redis.hget(k.state, `e:${all.length}`))!)).toEqual(all.at(-1));
    expect((await t.redis.keys(`${prefix}:run:{${runId}}*`)).sort()).toEqual([k.state, k.messages].sort()); // nothing else of it
    expect(await t.redis.ttl(k.state)).toBeGreaterThan(0);
    expect(await t.redis.ttl(k.messages)).toBeGreaterThan(0);
    expect(await t.store.events(newRunId())).toEqual([]); // a run that does not exist has none
    // more events than one read takes ahead (a follower that fell behind, a replay from the start)
    const long = newRunId();
    await t.store.create({
      runId: long,
      tenant: 'T',
      request,
      messages: [{ role: 'user', content: 'hi' }],
      bodyHash: 'h',
    });
    await t.store.startIteration(long, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: started,
    });
    for (let i = 0; i < 5; i++)
      await t.store.appendEvents(
        long,
        1,
        Array.from({ length: 20 }, (_, j) => ({
          type: 'message.delta' as const,
          data: { iteration: 1, text: `${i}.${j}` },
        })),
      );
    const every = await t.store.events(long);
    expect(every.map((e) => e.seq)).toEqual(Array.from({ length: 103 }, (_, i) => i + 1));
    expect((await t.store.events(long, 40)).map((e) => e.seq)).toEqual(every.slice(40).map((e) => e.seq));
    expect((await t.store.events(long, 100)).map((e) => (e.data as { text: string }).text)).toEqual([
      '4.17',
      '4.18',
      '4.19',
    ]);
    // a seq whose field is missing is stepped over: never a null
    await t.redis.hdel(t.store.keys.run(long).state, 'e:2', 'e:50');
    expect((await t.store.eventsRaw(long)).events.length).toBe(101);
    expect((await t.store.events(long, 40)).map((e) => e.seq)).toEqual(
      every
        .slice(40)
        .map((e) => e.seq)
        .filter((q) => q !== 50),
    );
  });

  it('the start check scans the live runs until one scan finds none of another layout, then never again', async () => {
    const store = new RunStore(t.redis, `${prefix}:once`);
    const marker = store.keys.layoutChecked(RUN_LAYOUT);
    const plantOld = async (runId: string) => {
      await t.redis.zadd(store.keys.queuedRuns, 0, runId);
      await t.redis.hset(store.keys.run(runId).state, 'status', 'queued'); // no `lay`: layout 1
    };
    await plantOld('run_old1');
    expect(await store.indexes.liveRunsOfOtherLayoutsAtStart()).toEqual(['run_old1']);
    expect(await store.indexes.liveRunsOfOtherLayoutsAtStart()).toEqual(['run_old1']); // found again: not marked
    expect(await t.redis.exists(marker)).toBe(0);
    await t.redis.hset(store.keys.run('run_old1').state, 'status', 'cancelled'); // drained
    expect(await store.indexes.liveRunsOfOtherLayoutsAtStart()).toEqual([]);
    expect(await t.redis.exists(marker)).toBe(1);
    await plantOld('run_old2'); // a later start does not read the runs again
    expect(await store.indexes.liveRunsOfOtherLayoutsAtStart()).toEqual([]);
  });

  it("a live run of an earlier build's layout (1: no `lay`; 2) is refused by every step, untouched, and found at start", async () => {
    const fresh = await withBatch(['a1']);
    expect(await t.store.indexes.liveRunsOfOtherLayouts()).toEqual([]);
    const olds: string[] = [];
    for (const lay of [null, '2']) {
      const runId = await withBatch(['o1']);
      const k = t.store.keys.run(runId);
      if (lay) await t.redis.hset(k.state, 'lay', lay);
      else await t.redis.hdel(k.state, 'lay');
      const before = await t.redis.hgetall(k.state);
      const legacy = new RegExp(`LEGACY_LAYOUT run ${runId} is stored in layout ${lay ?? '1'} .*drain old runs first`);
      await expect(
        t.store.calls.recordToolResult(runId, 'o1', outcome('x'), done('o1'), running('o1')),
      ).rejects.toThrow(legacy);
      await expect(t.store.calls.markToolRunning(runId, 'o1', running('o1'), 'j@1')).rejects.toThrow(legacy);
      await expect(
        t.store.startIteration(runId, {
          iteration: 2,
          expectPhase: 'tools',
          expectPendingFinal: '',
          callMode: 'tools',
          events: [],
        }),
      ).rejects.toThrow(legacy);
      await expect(
        t.store.appendEvents(runId, null, [{ type: 'message.delta', data: { iteration: 1, text: 'a' } }]),
      ).rejects.toThrow(legacy);
      await expect(
        t.store.finish(runId, { expectIteration: null, status: 'failed', stopReason: null, error: null, events: [] }),
      ).rejects.toThrow(legacy);
      await expect(t.store.eventsRaw(runId)).rejects.toThrow(legacy);
      expect(await t.redis.hgetall(k.state)).toEqual(before);
      olds.push(runId);
    }
    expect((await t.store.indexes.liveRunsOfOtherLayouts()).sort()).toEqual(olds.sort());
    expect(await t.store.indexes.liveRunsOfOtherLayouts(1)).toHaveLength(1);
    // a run of this layout goes on as before
    expect(await t.store.calls.recordToolResult(fresh, 'a1', outcome('x'), done('a1'), running('a1'))).toBe('recorded');
  });

  it("a create sent twice (a resend after a reconnect) or with another tenant's run id changes nothing", async () => {
    const runId = newRunId();
    const queuedBefore = await t.redis.zcard(t.store.keys.tenantRunsByStatus('T', 'queued'));
    const first = await t.store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h1' });
    expect(first).toMatchObject({ created: true, queued: queuedBefore + 1 }); // its first job's rank, read in the same step
    const before = await t.redis.hgetall(t.store.keys.run(runId).state);
    expect(await t.store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h2' })).toEqual({
      created: false,
      runId,
      bodyHash: 'h1',
    });
    expect(await t.store.create({ runId, tenant: 'U', request, messages: [], bodyHash: 'h1' })).toEqual({
      created: false,
      taken: true,
    });
    expect(await t.redis.hgetall(t.store.keys.run(runId).state)).toEqual(before);
  });
});
