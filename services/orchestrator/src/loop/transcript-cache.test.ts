import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId, type Message } from '@agentloop/protocol';
import { RunStore } from '@agentloop/runtime';
import { counterFor, messageTokens } from '@agentloop/llm';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { TranscriptCache } from './transcript-cache.js';

describe('TranscriptCache (real Redis)', () => {
  let redis: Redis;
  const prefix = testPrefix('tc');
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('bounds the count cheaply, counts exactly only when read, and both agree with a full count', async () => {
    const store = new RunStore(redis, prefix);
    const runId = newRunId();
    const messages: Message[] = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Wie spät ist es in 東京? 🙂' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'c1', name: 'current_time', arguments: '{"timezone":"Asia/Tokyo"}' }],
      },
      { role: 'tool', toolCallId: 'c1', content: '{"iso":"2026-11-30T10:00:00+09:00"}' },
    ];
    const model = { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} };
    await store.create({
      runId,
      tenant: 't',
      request: RunRequestSchema.parse({ input: 'x', model }),
      messages,
      bodyHash: 'h',
    });
    const st = (await store.load(runId))!;
    const view = await new TranscriptCache(store).view(st);
    const counter = counterFor(model);
    const exact = messages.reduce((n, m) => n + messageTokens(counter, m), 0);
    expect(view.upperBound).toBeGreaterThanOrEqual(exact);
    expect(view.tokens).toBe(exact);
    // the estimate counter (non-OpenAI families) is its own bound
    const gem = await new TranscriptCache(store).view({
      ...st,
      model: { provider: 'google', name: 'gemini-2.5-flash', params: {} },
    });
    expect(gem.upperBound).toBe(gem.tokens);
  });

  /** A run whose transcript is a question, one call (c1) and its result. */
  async function oneCallRun() {
    const store = new RunStore(redis, prefix);
    const runId = newRunId();
    const model = { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} };
    const messages: Message[] = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 't', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c1', content: 'r' },
    ];
    await store.create({
      runId,
      tenant: 't',
      request: RunRequestSchema.parse({ input: 'x', model }),
      messages,
      bodyHash: 'h',
    });
    return { store, runId, st: (await store.load(runId))! };
  }

  it('checks the pairing of the view once per message, and again from the start after a compression', async () => {
    const { store, runId, st } = await oneCallRun();
    const cache = new TranscriptCache(store);
    expect((await cache.view(st)).problems).toEqual([]);
    // a result nothing called, appended behind the cache's back: the next view reads and checks only the new message
    await redis.rpush(store.keys.run(runId).messages, JSON.stringify({ role: 'tool', toolCallId: 'zz', content: 'r' }));
    const broken = await cache.view(st, 4);
    expect(broken.messages).toHaveLength(4);
    expect(broken.problems).toEqual([expect.stringMatching(/answers 'zz', which was not called/)]);
    // a compression that cut the broken message away (a new tv and cut): the view is checked from its start again
    const compressed = await cache.view(
      { ...st, tv: st.tv + 1, viewFrom: 4, viewPrefix: [{ role: 'user', content: 'summary' }] },
      4,
    );
    expect(compressed.messages).toEqual([{ role: 'user', content: 'summary' }]);
    expect(compressed.problems).toEqual([]);
  });

  it('knows which call ids the run used (the checkpoint would rename them), and only of a history cached to the length asked', async () => {
    const { store, runId, st } = await oneCallRun();
    const cache = new TranscriptCache(store);
    expect(cache.callIdsFree(runId, 3, ['c2'])).toBe(false); // nothing cached yet: no answer without a read
    await cache.view(st);
    expect(cache.callIdsFree(runId, 3, ['c2', 'c3'])).toBe(true);
    expect(cache.callIdsFree(runId, 3, ['c2', 'c1'])).toBe(false);
    expect(cache.callIdsFree(runId, 4, ['c2'])).toBe(false); // not the length the caller knows
    // what this process appends is known too, after the ids were first collected
    cache.appended(runId, 5, [
      { role: 'assistant', content: null, toolCalls: [{ id: 'c2', name: 't', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c2', content: 'r' },
    ]);
    expect(cache.callIdsFree(runId, 5, ['c2'])).toBe(false);
    expect(cache.callIdsFree(runId, 5, ['c3'])).toBe(true);
    cache.forget(runId);
    expect(cache.callIdsFree(runId, 5, ['c3'])).toBe(false);
  });

  it('a start that returned the whole transcript makes the entry: the first view reads nothing', async () => {
    const store = new RunStore(redis, prefix);
    const model = { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} };
    const cache = new TranscriptCache(store);
    const runId = newRunId(); // no such run in Redis: a view that read would find nothing
    const messages: Message[] = [
      { role: 'system', content: 's' },
      { role: 'user', content: 'q' },
    ];
    cache.appended(runId, 3, messages, model); // not the whole history: no entry
    cache.appended(runId, 2, messages); // no model: no entry
    expect(cache.callIdsFree(runId, 2, [])).toBe(false);
    cache.appended(runId, 2, messages, model);
    const view = await cache.view({ id: runId, model, viewPrefix: [], viewFrom: 0, tv: 0 }, 2);
    expect(view.messages).toEqual(messages);
  });
});
