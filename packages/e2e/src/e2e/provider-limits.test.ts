import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessStack } from '../test-support/stack.js';
import { finishedRun } from '../test-support/helpers.js';

describe('per-provider limits (AGENTLOOP_PROVIDER_LIMITS) protect a provider from a stampede', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: () => ({ text: 'a slow answer, streamed in small pieces', chunking: 'fine', delayMs: 15 }),
      env: { AGENTLOOP_PROVIDER_LIMITS: JSON.stringify({ openai: { concurrency: 1 } }) },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('six concurrent runs reach the provider one at a time, held back as delayed jobs, and all complete', async () => {
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => s.a.startRun({ input: `run ${i}`, model: { provider: 'openai', name: 'gpt-4o-mini' } })));
    for (const id of ids) {
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(events.some((e) => e.type === 'llm.retry')).toBe(false); // holding back is not a provider failure
    }
    expect(s.mock.requests.length).toBe(6);
    expect(s.mock.maxInFlight).toBe(1);
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    const throttled = Number(/agentloop_llm_throttled_total\{provider="openai",limit="concurrency"\} (\d+)/.exec(metrics)?.[1] ?? 0);
    expect(throttled).toBeGreaterThan(0);
  });
});
