import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, startMockLlm, stepOf, testPrefix, testRedisUrl, type MockLlmServer } from '@agentloop/testing';
import { forkedLoop, type BenchLoop } from './loop-host.js';

// The core figures drive each loop in a process of its own: the process must make the runs it is asked for, measure
// its own CPU over exactly the window, open the window only once the bench has armed it, and go away when closed.
describe('a bench loop in a process of its own', () => {
  const prefix = testPrefix('host');
  let redis: Redis;
  let mock: MockLlmServer;
  let loop: BenchLoop;

  beforeAll(async () => {
    redis = new Redis(testRedisUrl());
    mock = await startMockLlm({
      script: (req) =>
        stepOf(req) < 2 ? { toolCalls: [{ name: 'noop', args: { i: stepOf(req) } }] } : { text: 'done' },
    });
    loop = await forkedLoop({
      kind: 'raw',
      provider: 'openai',
      prefix,
      redisUrl: testRedisUrl(),
      mockUrl: mock.url,
      toolsModule: '',
      localToolsModule: '',
      iterations: 3,
      concurrency: { orchestrator: 4, tools: 4 },
      prior: [{ role: 'user', content: 'go' }],
    });
  });

  afterAll(async () => {
    await loop?.close(); // closed already when the tests passed: then a no-op
    await mock.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('warms up, then measures a window that opens only after the bench armed it', async () => {
    const warm = await loop.warmup(2, 2, 'warm-up');
    expect(warm.iterations).toBe(6);
    let armedAt = 0;
    const requestsBefore = mock.journal.length;
    const cpu = await loop.window(4, 2, 'window', async () => {
      await new Promise((r) => setTimeout(r, 100));
      armedAt = mock.journal.length;
    });
    expect(armedAt).toBe(requestsBefore); // no run started before the bench said go
    expect(cpu.iterations).toBe(12);
    expect(mock.journal.length - requestsBefore).toBe(12);
    expect(cpu.cpuMs).toBeGreaterThan(0);
    expect(cpu.seconds).toBeGreaterThan(0);
    expect(cpu.mainThreadMs).toBeLessThanOrEqual(cpu.cpuMs + 10); // one clock tick of /proc's granularity
  });

  it('closes: its process ends', async () => {
    await loop.close();
    await expect(loop.warmup(1, 1, 'after close')).rejects.toThrow();
  });
});
