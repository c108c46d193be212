import { describe, expect, it } from 'vitest';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';

import { RunStore } from './run-store.js';
import { useTestStore } from './test-support/test-store.js';
import { STATE_FIELDS, parseRunState } from './run-state.js';

/**
 * The state hash layout (lua/common.lua): a run's calls are fields of its state hash (layout 2), and so are its
 * events (layout 3), so one step reads and writes the run, its calls and its events in one command each; a run of
 * layout 1 or 2 (earlier builds, AGENTLOOP_RUN_LAYOUT) keeps its layout, and every step serves every layout.
 */
describe('run state layout (real Redis)', () => {
  const t = useTestStore('layout');
  const { prefix } = t;
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  const totals = { promptTokens: 10, completionTokens: 5, reasoningTokens: 0, cachedTokens: 0, totalTokens: 15, costUsd: 0.001, llmCalls: 1 };
  const meta = (name: string) => ({ name, arguments: '{}', display: '{}', pool: 'default', iteration: 1 });
  const started: NewEvent[] = [{ type: 'run.started', data: {} }, { type: 'iteration.started', data: { iteration: 1 } }];
  const outcome = (text: string) => ({ status: 'completed' as const, content: text, executed: true });
  const running = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'running' as const });
  const done = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'completed' as const });

  /** A run at iteration 1 with `ids` dispatched (phase tools). */
  async function withBatch(ids: string[]): Promise<string> {
    const runId = newRunId();
    await t.store.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    expect(await t.store.startIteration(runId, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started })).toMatchObject({ length: null, toolCalls: 0 });
    const calls = ids.map((id) => ({ id, meta: meta('a'), outcome: null }));
    const message = { role: 'assistant' as const, content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) };
    expect(await t.store.checkpoint(runId, { iteration: 1, message, totals, iterationUsage: {}, final: null, calls, pendingFinal: '', repeat: { fingerprint: '', count: 0 }, events: [] })).toBe(true);
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
    for (const id of ids.slice(0, 50)) expect(await t.store.recordToolResult(runId, id, outcome('x'.repeat(2000)), done(id), running(id))).toBe('recorded');
    const k = t.store.keys.run(runId);
    expect(await t.redis.exists(k.calls)).toBe(0);
    expect(await t.redis.hget(k.state, 'c:c7:st')).toBe('done');
    expect(await t.store.calls.record(runId, 'c7')).toMatchObject({ status: 'done', meta: { name: 'a' }, outcome: { content: 'x'.repeat(2000) } });
    expect(await t.store.calls.answered(runId, 'c299')).toBe(false);
    expect(await t.store.calls.answered(runId, 'unknown')).toBe(true);
    expect((await t.store.calls.metaAndOutcomes(runId, ['c7', 'c299'])).map((r) => [r.meta?.name, r.outcome?.content.length ?? null])).toEqual([['a', 2000], ['a', null]]);
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
      for (const id of ['a2', 'a1']) await t.store.recordToolResult(runId, id, outcome(`r-${id}`), done(id), running(id));
      const r = await t.store.startIteration(runId, { iteration: 2, expectPhase: 'tools', expectPendingFinal: '', callMode: 'tools', events: [], expectBatch: guess, returnState: true });
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

  it('a layout-1 run (AGENTLOOP_RUN_LAYOUT=1, or a run of a build before layout 2) keeps its calls in their own hash, through every step', async () => {
    const v1 = new RunStore(t.redis, prefix, 60, 1);
    const runId = newRunId();
    await v1.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await v1.startIteration(runId, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started });
    const message = { role: 'assistant' as const, content: null, toolCalls: ['o1', 'o2'].map((id) => ({ id, name: 'a', arguments: '{}' })) };
    const calls = ['o1', 'o2'].map((id) => ({ id, meta: meta('a'), outcome: null }));
    expect(await v1.checkpoint(runId, { iteration: 1, message, totals, iterationUsage: {}, final: null, calls, pendingFinal: '', repeat: { fingerprint: '', count: 0 }, events: [] })).toBe(true);
    const k = t.store.keys.run(runId);
    expect(await t.redis.hget(k.calls, 'o1:st')).toBe('queued');
    expect(Object.keys(await t.redis.hgetall(k.state)).filter((f) => f.startsWith('c:') || f === 'lay')).toEqual([]);
    // a build of layout 2 serves it as it is (a rolling deploy: either build may take any step)
    expect(await t.store.calls.record(runId, 'o1')).toMatchObject({ status: 'queued', meta: { name: 'a' } });
    expect(await t.store.calls.meta(runId, ['o2', 'nope'])).toEqual([meta('a'), null]);
    expect(await t.store.calls.metaAndOutcomes(runId, ['o1', 'nope'])).toEqual([{ meta: meta('a'), outcome: null }, { meta: null, outcome: null }]);
    expect(await t.store.recordToolResult(runId, 'o1', outcome('one'), done('o1'), running('o1'))).toBe('recorded');
    expect(await v1.recordToolResult(runId, 'o1', outcome('again'), done('o1'), running('o1'))).toBeNull(); // answered once
    expect(await t.store.markToolRunning(runId, 'o2', running('o2'), 'j@1')).toBe('first');
    expect(await t.store.recordToolResult(runId, 'o2', outcome('two'), done('o2'), undefined, 'j@1')).toBe('recorded');
    expect(await t.redis.hget(k.calls, 'o2:out')).toContain('two');
    const r = await t.store.startIteration(runId, { iteration: 2, expectPhase: 'tools', expectPendingFinal: '', callMode: 'tools', events: [], expectBatch: ['o1', 'o2'], returnState: true });
    if (typeof r === 'string') throw new Error(r);
    expect(r.appended).toMatchObject([{ toolCallId: 'o1', content: 'one' }, { toolCallId: 'o2', content: 'two' }]);
    expect(r.state).toEqual(await t.store.load(runId));
    expect(await t.store.finish(runId, { expectIteration: 2, status: 'cancelled', stopReason: 'cancelled', error: null, events: [{ type: 'run.cancelled', data: { reason: 'test' } }] })).toEqual({ closed: [] });
    expect(await t.redis.ttl(k.calls)).toBeGreaterThan(0); // its calls hash expires with the run
    expect(await t.redis.exists(k.calls)).toBe(1);
    expect(await t.redis.hget(k.state, 'lay')).toBeNull();
  });

  it('keeps the events in the state hash (layout 3), a layout-2 run in its list; both read the same and expire with the run', async () => {
    const v2 = new RunStore(t.redis, prefix, 60, 2);
    const v3 = new RunStore(t.redis, prefix, 60, 3);
    const seen: Record<string, unknown[]> = {};
    for (const [name, creator] of [['v2', v2], ['v3', v3]] as const) {
      const runId = newRunId();
      await creator.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
      // every step by the other build too (a rolling deploy), and the appends of a model call
      await t.store.startIteration(runId, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started });
      expect(await v2.appendEvents(runId, 1, [{ type: 'message.delta', data: { iteration: 1, text: 'a' } }])).toBe(true);
      expect(await v3.appendEvents(runId, 1, [{ type: 'message.delta', data: { iteration: 1, text: 'b' } }])).toBe(true);
      const message = { role: 'assistant' as const, content: null, toolCalls: [{ id: 'x1', name: 'a', arguments: '{}' }] };
      await v2.checkpoint(runId, { iteration: 1, message, totals, iterationUsage: {}, final: null, calls: [{ id: 'x1', meta: meta('a'), outcome: null }], pendingFinal: '', repeat: { fingerprint: '', count: 0 }, events: [] });
      expect(await v3.recordToolResult(runId, 'x1', outcome('one'), done('x1'), running('x1'))).toBe('recorded');
      expect(await v2.finish(runId, { expectIteration: 1, status: 'cancelled', stopReason: 'cancelled', error: null, events: [{ type: 'run.cancelled', data: { reason: 'test' } }] })).toEqual({ closed: [] });
      const k = t.store.keys.run(runId);
      const all = await v2.events(runId);
      expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
      expect(await v3.events(runId, 3)).toEqual(all.slice(3));
      expect(await v3.events(runId, all.length)).toEqual([]);
      seen[name] = all.map((e) => [e.type, e.data]);
      expect(await t.redis.ttl(k.state)).toBeGreaterThan(0);
      if (name === 'v3') {
        expect(await t.redis.hget(k.state, 'lay')).toBe('3');
        expect(await t.redis.exists(k.events)).toBe(0);
        expect(JSON.parse((await t.redis.hget(k.state, `e:${all.length}`))!)).toEqual(all.at(-1));
      } else {
        expect(await t.redis.llen(k.events)).toBe(all.length);
        expect(await t.redis.ttl(k.events)).toBeGreaterThan(0);
      }
    }
    expect(seen.v3).toEqual(seen.v2);
    expect(seen.v3!.map((e) => (e as [string])[0])).toEqual(['run.queued', 'run.started', 'iteration.started', 'message.delta', 'message.delta', 'tool.call', 'tool.call', 'iteration.completed', 'run.cancelled']);
    expect(await t.store.events(newRunId())).toEqual([]); // a run that does not exist has none
    // more events than one read takes ahead (a follower that fell behind, a replay from the start)
    const long = newRunId();
    await t.store.create({ runId: long, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await t.store.startIteration(long, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started });
    for (let i = 0; i < 5; i++) await t.store.appendEvents(long, 1, Array.from({ length: 20 }, (_, j) => ({ type: 'message.delta' as const, data: { iteration: 1, text: `${i}.${j}` } })));
    const every = await t.store.events(long);
    expect(every.map((e) => e.seq)).toEqual(Array.from({ length: 103 }, (_, i) => i + 1));
    expect((await t.store.events(long, 40)).map((e) => e.seq)).toEqual(every.slice(40).map((e) => e.seq));
    expect((await t.store.events(long, 100)).map((e) => (e.data as { text: string }).text)).toEqual(['4.17', '4.18', '4.19']);
    // an event a build that knows no layout 3 left out of the hash (it appended it to the list): skipped, never a null
    await t.redis.hdel(t.store.keys.run(long).state, 'e:2', 'e:50');
    expect((await t.store.eventsRaw(long)).events.length).toBe(101);
    expect((await t.store.events(long, 40)).map((e) => e.seq)).toEqual(every.slice(40).map((e) => e.seq).filter((q) => q !== 50));
  });

  it('a create sent twice (a resend after a reconnect) or with another tenant\'s run id changes nothing', async () => {
    const runId = newRunId();
    const first = await t.store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h1' });
    expect(first).toMatchObject({ created: true });
    const before = await t.redis.hgetall(t.store.keys.run(runId).state);
    expect(await t.store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h2' })).toEqual({ created: false, runId, bodyHash: 'h1' });
    expect(await t.store.create({ runId, tenant: 'U', request, messages: [], bodyHash: 'h1' })).toEqual({ created: false, taken: true });
    expect(await t.redis.hgetall(t.store.keys.run(runId).state)).toEqual(before);
  });
});
