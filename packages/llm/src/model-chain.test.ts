import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlmServer, type ReplySpec } from '@agentloop/testing';
import { callModelChain, type RetryInfo } from './model-chain.js';
import { ProviderRegistry } from './providers/registry.js';
import { LlmError } from './types.js';
import { slotGate } from './provider-gate.js';

describe('callModelChain: retries, retry-after, fallback', () => {
  let mock: MockLlmServer;
  let replies: ReplySpec[] = [];
  let registry: ProviderRegistry;
  const sleeps: number[] = [];
  const sleep = async (ms: number) => void sleeps.push(ms);
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => replies.shift() ?? { text: 'default' } });
    registry = new ProviderRegistry({
      openai: { apiKey: 'k', baseUrl: `${mock.url}/v1` },
      deepseek: { apiKey: 'k', baseUrl: `${mock.url}/deepseek/v1` },
    });
  });
  afterAll(async () => {
    await mock.close();
  });
  const primary = { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} };
  const secondary = { provider: 'deepseek' as const, name: 'deepseek-chat', params: {} };
  const req = { messages: [{ role: 'user' as const, content: 'hi' }], tools: null };

  it('honours retry-after-ms and retry-after on 429, then succeeds', async () => {
    sleeps.length = 0;
    replies = [
      {
        error: {
          status: 429,
          message: 'Rate limit reached',
          headers: { 'retry-after-ms': '1234' },
          type: 'requests',
          code: 'rate_limit_exceeded',
        },
      },
      { error: { status: 429, message: 'Rate limit reached', headers: { 'retry-after': '2' } } },
      { text: 'finally' },
    ];
    const retries: RetryInfo[] = [];
    const res = await callModelChain(registry, [primary], req, { onRetry: (r) => void retries.push(r) }, { sleep });
    expect(res.message.content).toBe('finally');
    expect(sleeps).toEqual([1234, 2000]);
    expect(retries.map((r) => [r.attempt, r.discardOutput])).toEqual([
      [2, false],
      [3, false],
    ]);
    expect(retries[0]!.reason).toContain('429');
  });

  it('falls back to the next model when the primary keeps failing before any output', async () => {
    replies = [
      { error: { status: 500, message: 'boom' } },
      { error: { status: 503, message: 'down' } },
      { text: 'from deepseek' },
    ];
    const fallbacks: Array<{ from: string; to: string }> = [];
    const res = await callModelChain(
      registry,
      [primary, secondary],
      req,
      { onFallback: (f) => void fallbacks.push(f) },
      { sleep, attemptsPerModel: 2 },
    );
    expect(res.message.content).toBe('from deepseek');
    expect(res.provider).toBe('deepseek');
    expect(fallbacks).toEqual([{ from: 'openai/gpt-4o-mini', to: 'deepseek/deepseek-chat', reason: 'server' }]);
  });

  it('retries a stream cut after output on the same model, telling the caller to discard, never falling back silently', async () => {
    replies = [{ text: 'partial answer that dies', chunking: 'fine', cutAfterFrames: 3 }, { text: 'whole answer' }];
    const retries: RetryInfo[] = [];
    const deltas: string[] = [];
    const res = await callModelChain(
      registry,
      [primary, secondary],
      { ...req, onTextDelta: (t) => deltas.push(t) },
      { onRetry: (r) => void retries.push(r) },
      { sleep },
    );
    expect(res.message.content).toBe('whole answer');
    expect(res.provider).toBe('openai');
    expect(retries).toHaveLength(1);
    expect(retries[0]!.discardOutput).toBe(true);
  });

  it('does not retry context_length_exceeded: the caller must shrink the context', async () => {
    replies = [
      {
        error: {
          status: 400,
          code: 'context_length_exceeded',
          message: "This model's maximum context length is 10 tokens.",
        },
      },
    ];
    const err = await callModelChain(registry, [primary, secondary], req, {}, { sleep }).catch((e) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err.kind).toBe('context_length');
  });

  it('fails with the last error when every model fails', async () => {
    replies = Array.from({ length: 6 }, () => ({ error: { status: 500, message: 'nope' } }));
    const err = await callModelChain(registry, [primary, secondary], req, {}, { sleep }).catch((e) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err.kind).toBe('server');
  });

  it('falls back when a provider is not configured', async () => {
    const bare = new ProviderRegistry({ deepseek: { apiKey: 'k', baseUrl: `${mock.url}/deepseek/v1` } });
    replies = [{ text: 'ok' }];
    const res = await callModelChain(bare, [primary, secondary], req, {}, { sleep });
    expect(res.provider).toBe('deepseek');
  });

  it('sends DeepSeek reasoning back on assistant messages, and only to DeepSeek', async () => {
    replies = [{ text: 'a' }, { text: 'b' }, { text: 'c' }];
    const history = [
      { role: 'user' as const, content: 'q' },
      {
        role: 'assistant' as const,
        content: null,
        reasoning: 'thinking…',
        toolCalls: [{ id: 'c1', name: 't', arguments: '{}' }],
      },
      { role: 'tool' as const, content: 'r', toolCallId: 'c1' },
    ];
    const before = mock.requests.length;
    await callModelChain(registry, [secondary], { messages: history, tools: null }, {}, { sleep });
    await callModelChain(
      registry,
      [{ ...primary, api: 'chat' as const }],
      { messages: history, tools: null },
      {},
      { sleep },
    );
    await callModelChain(registry, [primary], { messages: history, tools: null }, {}, { sleep });
    const [ds, oa, responses] = mock.requests.slice(before);
    expect((ds!.body.messages as Array<Record<string, unknown>>)[1]!.reasoning_content).toBe('thinking…');
    expect((oa!.body.messages as Array<Record<string, unknown>>)[1]!.reasoning_content).toBeUndefined();
    expect(responses!.wire).toBe('responses'); // OpenAI's default API: no field of it carries another provider's reasoning
    expect(JSON.stringify(responses!.body.input)).not.toContain('thinking…');
  });
});

describe('per-provider admission (slotGate)', () => {
  const spec = (provider: 'openai' | 'google') => ({ provider, name: 'm', params: {} }) as const;
  const okClient = (calls: string[]) => ({
    provider: 'x',
    call: async (r: { model: { provider: string } }) => (
      calls.push(r.model.provider),
      {
        message: { role: 'assistant' as const, content: 'ok' },
        finishReason: 'stop' as const,
        usage: { promptTokens: 1, completionTokens: 1, reasoningTokens: 0, cachedTokens: 0 },
        provider: r.model.provider,
        model: 'm',
      }
    ),
  });

  it('hands a busy provider back to the caller as throttled — no retry, no fallback, no call made', async () => {
    const calls: string[] = [];
    const registry = { clientFor: () => okClient(calls) } as unknown as ProviderRegistry;
    const throttled: string[] = [];
    const gate = slotGate(async (p) => (p === 'openai' ? { kind: 'busy' } : null), {
      onThrottled: (p, l) => throttled.push(`${p}:${l}`),
    });
    const err = await callModelChain(
      registry,
      [spec('openai'), spec('google')],
      { messages: [], tools: null },
      {},
      { gate },
    ).catch((e) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err.opts.throttled).toBe('concurrency');
    expect(err.opts.retryAfterMs).toBeGreaterThan(0);
    expect(calls).toEqual([]);
    expect(throttled).toEqual(['openai:concurrency']);
  });

  it('waits out a short rate wait in place, then calls; the slot is released after the call', async () => {
    const calls: string[] = [];
    const registry = { clientFor: () => okClient(calls) } as unknown as ProviderRegistry;
    const answers: Array<'rate' | 'taken'> = ['rate', 'taken'];
    let released = 0;
    const gate = slotGate(async () =>
      answers.shift() === 'rate'
        ? { kind: 'rate', waitMs: 30 }
        : { kind: 'taken', release: async () => void released++ },
    );
    const t0 = performance.now();
    const res = await callModelChain(registry, [spec('openai')], { messages: [], tools: null }, {}, { gate });
    expect(res.message.content).toBe('ok');
    expect(performance.now() - t0).toBeGreaterThanOrEqual(25);
    expect(calls).toEqual(['openai']);
    expect(released).toBe(1);
  });

  it('a long rate wait is handed back with the wait it needs', async () => {
    const registry = { clientFor: () => okClient([]) } as unknown as ProviderRegistry;
    const gate = slotGate(async () => ({ kind: 'rate', waitMs: 5000 }), { waitInPlaceMs: 1000 });
    const err = await callModelChain(registry, [spec('openai')], { messages: [], tools: null }, {}, { gate }).catch(
      (e) => e,
    );
    expect(err.opts).toMatchObject({ throttled: 'rate', retryAfterMs: 5000 });
  });
});
