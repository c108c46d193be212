import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, startMockLlm, stepOf, testPrefix, testRedisUrl, type MockLlmServer } from '@agentloop/testing';
import { forkedLoop, type LoopKind } from './loop-host.js';

// Issue 26's peers run the core workload like the other loops: each run makes the mock's tool calls, each answered with
// the tool's result, then the answer — the same requests the product's runs make.
describe('the local-tools peers of the core figures (raw loop with the tool inline, the OpenAI Agents SDK)', () => {
  const prefix = testPrefix('peers');
  let redis: Redis;
  let mock: MockLlmServer;

  beforeAll(async () => {
    redis = new Redis(testRedisUrl());
    mock = await startMockLlm({
      script: (req) =>
        stepOf(req) < 2 ? { toolCalls: [{ name: 'noop', args: { i: stepOf(req) } }] } : { text: 'done' },
    });
  });

  afterAll(async () => {
    await mock.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  for (const kind of ['inline', 'sdk'] as LoopKind[])
    it(`${kind}: three model calls a run, the tool's result in each next request`, async () => {
      const loop = await forkedLoop({
        kind,
        provider: 'openai',
        prefix: `${prefix}-${kind}`,
        redisUrl: testRedisUrl(),
        mockUrl: mock.url,
        toolsModule: '',
        localToolsModule: '',
        iterations: 3,
        concurrency: { orchestrator: 4, tools: 4 },
        prior: [{ role: 'user', content: 'go' }],
      });
      try {
        const before = mock.journal.length;
        const cpu = await loop.window(4, 2, kind, async () => {});
        expect(cpu.iterations).toBe(12);
        const requests = mock.journal.slice(before).map((e) => e.req);
        expect(requests).toHaveLength(12);
        // every request after a tool call carries its result, and no run asks past its answer
        for (const r of requests) {
          const results = r.messages.filter((m) => m.role === 'tool');
          expect(results).toHaveLength(stepOf(r));
          for (const m of results) expect(JSON.parse(String(m.content))).toEqual({ ok: true });
        }
      } finally {
        await loop.close();
      }
    }, 60_000);
});
