import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, startMockLlm, stepOf, testPrefix, testRedisUrl, type MockLlmServer } from '@agentloop/testing';
import { DurableFloorLoop } from './durable-floor-loop.js';
import { rawModel } from './raw-model-call.js';

// The floor the core figures compare the product with must do the durable work it claims, or its figure flatters.
describe('the durable floor loop of the bench', () => {
  const prefix = testPrefix('floor');
  let redis: Redis;
  let mock: MockLlmServer;
  let loop: DurableFloorLoop;
  let toolRuns = 0;

  beforeAll(async () => {
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    mock = await startMockLlm({
      script: (req) =>
        stepOf(req) < 3 ? { toolCalls: [{ name: 'noop', args: { i: stepOf(req) } }] } : { text: 'done' },
    });
    const tools = [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' } }];
    loop = new DurableFloorLoop(
      redis,
      prefix,
      await rawModel('chat', mock.url, 'gpt-4o-mini', tools),
      [{ role: 'user', content: 'go' }],
      { orchestrator: 4, tools: 4 },
      () => toolRuns++,
    );
    await loop.start();
  });

  afterAll(async () => {
    await loop.close();
    await mock.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('stores each run, its transcript, its events and every result before the next step uses it', async () => {
    await Promise.all([loop.run(), loop.run()]);
    expect(loop.iterations).toBe(8);
    expect(toolRuns).toBe(6);
    for (const run of ['f0', 'f1']) {
      const [state, msgs] = loop.keys(run);
      expect(await redis.hget(state, 'status')).toBe('completed');
      const seq = Number(await redis.hget(state, 'seq'));
      const events = await redis.hmget(state, ...Array.from({ length: seq }, (_, i) => `e:${i + 1}`));
      const transcript = (await redis.lrange(msgs, 0, -1)).map((m) => JSON.parse(m) as { role: string });
      expect(transcript.map((m) => m.role)).toEqual([
        'user',
        'assistant',
        'tool',
        'assistant',
        'tool',
        'assistant',
        'tool',
        'assistant',
      ]);
      const types = events.flatMap((l) => l!.split('\n')).map((l) => (JSON.parse(l) as { type: string }).type);
      expect(types[0]).toBe('run.queued');
      expect(types.at(-1)).toBe('run.completed');
      expect(types.filter((t) => t === 'iteration.started')).toHaveLength(4);
      expect(types.filter((t) => t === 'tool.call')).toHaveLength(6); // dispatched, then completed, for each of 3 calls
    }
  });

  it('executes every call once where the provider gives calls no id (Gemini)', async () => {
    const gemini = await rawModel('gemini', mock.url, 'gemini-2.5-flash', [
      { name: 'noop', description: 'does nothing', parameters: { type: 'object' } },
    ]);
    let runs = 0;
    const g = new DurableFloorLoop(
      redis,
      `${prefix}-g`,
      gemini,
      [{ role: 'user', content: 'go' }],
      { orchestrator: 2, tools: 2 },
      () => runs++,
    );
    await g.start();
    try {
      await g.run();
      expect(g.iterations).toBe(4);
      expect(runs).toBe(3);
    } finally {
      await g.close();
      await cleanupPrefix(redis, `${prefix}-g`);
    }
  });

  it('never executes a finished call again', async () => {
    const before = toolRuns;
    await loop.redeliverLastCall('f0');
    expect(toolRuns).toBe(before);
  });
});
