import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARIZE_SYSTEM } from '@agentloop/llm';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
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
    const ids = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        s.a.startRun({ input: `run ${i}`, model: { provider: 'openai', name: 'gpt-4o-mini' } }),
      ),
    );
    for (const id of ids) {
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(events.some((e) => e.type === 'llm.retry')).toBe(false); // holding back is not a provider failure
    }
    expect(s.mock.requests.length).toBe(6);
    expect(s.mock.maxInFlight).toBe(1);
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    const throttled = Number(
      /agentloop_llm_throttled_total\{provider="openai",limit="concurrency"\} (\d+)/.exec(metrics)?.[1] ?? 0,
    );
    expect(throttled).toBeGreaterThan(0);
  });
});

describe('per-provider limits hold back the compressor’s summaries too', () => {
  const isSummary = (req: MockRequest) => req.messages[0]?.content === SUMMARIZE_SYSTEM;
  /** Calls issued per run (a compressed transcript no longer shows them all). */
  const issued = new Map<string, number>();
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      contextWindows: { 'gpt-4o-mini': 4000 },
      script: async (req): Promise<ReplySpec> => {
        await new Promise((r) => setTimeout(r, 60)); // every call stays in flight a while: an ungated one would overlap
        if (isSummary(req)) return { text: '- several big results were fetched' };
        const input = req.messages.find((m) => m.role === 'user')!.content!;
        const n = issued.get(input) ?? 0;
        if (req.tools.length && n < 6) {
          issued.set(input, n + 1);
          return { toolCalls: [{ name: 'big', args: { n: 3000 + n } }] };
        }
        return { text: `done after ${n} calls` };
      },
      env: { AGENTLOOP_PROVIDER_LIMITS: JSON.stringify({ openai: { concurrency: 1 } }) },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('three runs that compress reach the provider one call at a time, summaries included, and all complete', async () => {
    const ids = await Promise.all(
      [0, 1, 2].map((i) =>
        s.a.startRun({
          input: `run ${i}: fetch big results`,
          model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 4000 },
          tools: ['big'],
          limits: { maxIterations: 20 },
        }),
      ),
    );
    for (const id of ids) {
      const { snap, events } = await finishedRun(s.a, id, 90_000);
      expect(snap).toMatchObject({ status: 'completed', output: 'done after 6 calls' });
      expect(events.some((e) => e.type === 'context.compressed' && e.data.strategy === 'summarize')).toBe(true);
    }
    expect(s.mock.requests.filter(isSummary).length).toBeGreaterThanOrEqual(3);
    expect(s.mock.maxInFlight).toBe(1);
  }, 120_000);
});
