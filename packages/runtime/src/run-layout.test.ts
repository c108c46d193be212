import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { RunStore } from './run-store.js';
import { STATE_FIELDS, parseRunState } from './run-state.js';

/**
 * The state hash layout (lua/common.lua): a run's calls are fields of its state hash (layout 2), so one step reads
 * and writes the run and its calls in one command each; a run stored before (layout 1, calls in their own hash) is
 * moved over by the first script that touches it and read correctly before that.
 */
describe('run state layout (real Redis)', () => {
  let redis: Redis;
  let store: RunStore;
  const prefix = testPrefix('layout');
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
    store = new RunStore(redis, prefix);
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  const totals = { promptTokens: 10, completionTokens: 5, reasoningTokens: 0, cachedTokens: 0, totalTokens: 15, costUsd: 0.001, llmCalls: 1 };
  const meta = (name: string) => ({ name, arguments: '{}', display: '{}', pool: 'default', iteration: 1 });
  const started: NewEvent[] = [{ type: 'run.started', data: {} }, { type: 'iteration.started', data: { iteration: 1 } }];
  const outcome = (text: string) => ({ status: 'completed' as const, content: text, executed: true });
  const running = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'running' as const });
  const done = (callId: string) => ({ callId, name: 'a', arguments: {}, status: 'completed' as const });

  /** A run at iteration 1 with `ids` dispatched (phase tools). */
  async function withBatch(ids: string[], freshId = true): Promise<string> {
    const runId = newRunId();
    await store.create({ runId, freshId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    expect(await store.startIteration(runId, { iteration: 1, expectPhase: 'queued', expectPendingFinal: '', callMode: 'tools', events: started })).toMatchObject({ length: null, toolCalls: 0 });
    const calls = ids.map((id) => ({ id, meta: meta('a'), outcome: null }));
    const message = { role: 'assistant' as const, content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) };
    expect(await store.checkpoint(runId, { iteration: 1, message, totals, iterationUsage: {}, final: null, calls, pendingFinal: '', repeat: { fingerprint: '', count: 0 }, events: [] })).toBe(true);
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
    for (const id of ids.slice(0, 50)) expect(await store.recordToolResult(runId, id, outcome('x'.repeat(2000)), done(id), running(id))).toBe('recorded');
    const k = store.keys.run(runId);
    expect(await redis.exists(k.calls)).toBe(0);
    expect(await redis.hget(k.state, 'c:c7:st')).toBe('done');
    expect(await store.calls.record(runId, 'c7')).toMatchObject({ status: 'done', meta: { name: 'a' }, outcome: { content: 'x'.repeat(2000) } });
    expect(await store.calls.answered(runId, 'c299')).toBe(false);
    expect(await store.calls.answered(runId, 'unknown')).toBe(true);
    const st = (await store.load(runId))!;
    expect(st).toMatchObject({ id: runId, status: 'running', phase: 'tools', batch: ids });
    expect(await redis.hlen(k.state)).toBeGreaterThan(STATE_FIELDS.length + 300); // the calls are there, but not read by load()
    const { runs } = await store.listRuns('T', { limit: 5 });
    expect(runs.map((r) => r.id)).toContain(runId);
  });

  it('starts the next iteration the same with a right, a wrong or no guess of the batch', async () => {
    const appended = [];
    for (const guess of [['a1', 'a2'], ['zz'], undefined]) {
      const runId = await withBatch(['a1', 'a2']);
      for (const id of ['a2', 'a1']) await store.recordToolResult(runId, id, outcome(`r-${id}`), done(id), running(id));
      const r = await store.startIteration(runId, { iteration: 2, expectPhase: 'tools', expectPendingFinal: '', callMode: 'tools', events: [], expectBatch: guess, returnState: true });
      if (typeof r === 'string') throw new Error(r);
      appended.push(r.appended);
      // the state a start returns (its first read, with what it wrote over it) is the state in Redis
      expect(r.state).toEqual(await store.load(runId));
      expect(r.state).toMatchObject({ iteration: 2, phase: 'model', batch: [], usage: { toolCalls: 2 } });
    }
    expect(appended[0]).toEqual([
      { role: 'tool', toolCallId: 'a1', content: 'r-a1' },
      { role: 'tool', toolCallId: 'a2', content: 'r-a2' },
    ]);
    expect(appended[1]).toEqual(appended[0]);
    expect(appended[2]).toEqual(appended[0]);
  });

  it('reads a layout-1 run (calls in their own hash) and moves it to layout 2 at its next step', async () => {
    const runId = await withBatch(['o1', 'o2']);
    const k = store.keys.run(runId);
    // as an earlier version stored it: the call fields, unprefixed, in the calls hash, and no layout field
    const all = await redis.hgetall(k.state);
    const callFields = Object.entries(all).filter(([f]) => f.startsWith('c:'));
    await redis.hset(k.calls, ...callFields.flatMap(([f, v]) => [f.slice(2), v]));
    await redis.hdel(k.state, 'lay', ...callFields.map(([f]) => f));
    expect(await store.calls.record(runId, 'o1')).toMatchObject({ status: 'queued', meta: { name: 'a' } });
    expect(await store.calls.meta(runId, ['o2', 'nope'])).toEqual([meta('a'), null]);

    expect(await store.recordToolResult(runId, 'o1', outcome('one'), done('o1'), running('o1'))).toBe('recorded');
    expect(await redis.exists(k.calls)).toBe(0);
    expect(await redis.hget(k.state, 'lay')).toBe('2');
    expect(await store.calls.record(runId, 'o1')).toMatchObject({ status: 'done', outcome: { content: 'one' } });
    expect(await store.calls.record(runId, 'o2')).toMatchObject({ status: 'queued' });
    expect(await store.recordToolResult(runId, 'o1', outcome('again'), done('o1'), running('o1'))).toBeNull(); // answered once
    await store.recordToolResult(runId, 'o2', outcome('two'), done('o2'), running('o2'));
    const r = await store.startIteration(runId, { iteration: 2, expectPhase: 'tools', expectPendingFinal: '', callMode: 'tools', events: [], expectBatch: ['o1', 'o2'] });
    expect(r).toMatchObject({ appended: [{ toolCallId: 'o1', content: 'one' }, { toolCallId: 'o2', content: 'two' }] });
  });

  it('a run id the caller did not just draw is looked up: a second create with it changes nothing', async () => {
    const runId = newRunId();
    const first = await store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h1' });
    expect(first).toMatchObject({ created: true });
    const before = await redis.hgetall(store.keys.run(runId).state);
    expect(await store.create({ runId, tenant: 'T', request, messages: [], bodyHash: 'h2' })).toEqual({ created: false, runId, bodyHash: 'h1' });
    expect(await store.create({ runId, tenant: 'U', request, messages: [], bodyHash: 'h1' })).toEqual({ created: false, taken: true });
    expect(await redis.hgetall(store.keys.run(runId).state)).toEqual(before);
  });
});
