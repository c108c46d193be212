import { describe, expect, it } from 'vitest';
import { EndpointPolicy } from './endpoint-policy.js';
import { PriceTable } from './pricing.js';

describe('EndpointPolicy', () => {
  const policy = new EndpointPolicy(
    ['https://llm.internal.example/v1', 'http://127.0.0.1:9000/compat/'],
    ['TENANT_A_KEY'],
  );

  it.each([
    ['https://llm.internal.example/v1', 'https://llm.internal.example/v1'],
    ['https://llm.internal.example/v1/', 'https://llm.internal.example/v1'],
    ['https://LLM.Internal.Example:443/v1/openai', 'https://llm.internal.example/v1/openai'],
    ['http://127.0.0.1:9000/compat/v1', 'http://127.0.0.1:9000/compat/v1'],
  ])('allows %s (used as %s)', (raw, used) => {
    expect(policy.allowedBaseUrl(raw)).toBe(used);
  });

  it.each([
    'https://llm.internal.example.evil.com/v1', // a longer host
    'https://llm.internal.example@evil.com/v1', // userinfo: the host is evil.com
    'https://user:pw@llm.internal.example/v1', // credentials in the URL
    'https://evil.com/https://llm.internal.example/v1',
    'http://llm.internal.example/v1', // another scheme
    'https://llm.internal.example:8443/v1', // another port
    'https://llm.internal.example/v10', // not on a segment boundary
    'https://llm.internal.example/v1/../../admin', // resolves outside the prefix
    'https://llm.internal.example/v1/%2e%2e/admin',
    'https://llm.internal.example/v1?x=1',
    'https://llm.internal.example/v1#frag',
    'ftp://llm.internal.example/v1',
    'file:///etc/passwd',
    'http://127.0.0.1:9001/compat/v1',
    'http://[::1]:9000/compat/v1',
    'http://2130706433:9000/other', // 127.0.0.1 in decimal, outside the path
    'not a url',
    '',
  ])('refuses %s', (raw) => {
    expect(policy.allowedBaseUrl(raw)).toBeNull();
    expect(policy.issues({ baseUrl: raw }).map((i) => i.path)).toEqual([['baseUrl']]);
  });

  it('allows only listed key variables', () => {
    expect(policy.issues({ apiKeyEnv: 'TENANT_A_KEY' })).toEqual([]);
    for (const name of ['OPENAI_API_KEY', 'AGENTLOOP_API_KEYS', 'PATH', 'tenant_a_key', 'TENANT_A_KEY_2'])
      expect(policy.issues({ apiKeyEnv: name }).map((i) => i.path)).toEqual([['apiKeyEnv']]);
  });

  it('allows nothing by default', () => {
    const none = new EndpointPolicy();
    expect(none.issues({ baseUrl: 'https://api.openai.com/v1', apiKeyEnv: 'OPENAI_API_KEY' })).toHaveLength(2);
  });

  it('refuses a configured prefix with credentials or a query', () => {
    expect(() => new EndpointPolicy(['https://u:p@x.example/v1'])).toThrow(/AGENTLOOP_MODEL_BASE_URLS/);
    expect(() => new EndpointPolicy(['https://x.example/v1?k=1'])).toThrow(/AGENTLOOP_MODEL_BASE_URLS/);
  });
});

describe('PriceTable', () => {
  const usage = { promptTokens: 1_000_000, completionTokens: 1_000_000, reasoningTokens: 0, cachedTokens: 0 };

  it('prices built-in models and charges cached input at the cached rate', () => {
    const t = new PriceTable();
    expect(t.cost('openai', 'gpt-4o-mini', usage)).toBeCloseTo(0.75);
    expect(t.cost('openai', 'gpt-4o-mini', { ...usage, cachedTokens: 1_000_000 })).toBeCloseTo(0.075 + 0.6);
    expect(t.price('openai-compatible', 'my-local-llama')).toBeNull();
  });

  it('extends the table from AGENTLOOP_MODEL_PRICES, which wins over the built-in prefix match', () => {
    const t = new PriceTable({
      'openai-compatible/my-local-llama': { input: 1, output: 2 },
      'openai/gpt-4o-mini': { input: 10, output: 20, cachedInput: 5 },
    });
    expect(t.cost('openai-compatible', 'my-local-llama', usage)).toBeCloseTo(3);
    expect(t.cost('openai-compatible', 'my-local-llama', { ...usage, cachedTokens: 500_000 })).toBeCloseTo(
      0.5 + 0.5 + 2,
    );
    expect(t.cost('openai', 'gpt-4o-mini', { ...usage, cachedTokens: 1_000_000 })).toBeCloseTo(5 + 20);
    expect(t.price('deepseek', 'my-local-llama')).toBeNull();
  });

  it('labels metrics by the table entry a model matched, never by the name a request made up', () => {
    const t = new PriceTable({ 'openai-compatible/llama': { input: 1, output: 2 } });
    expect(t.metricLabel('openai', 'gpt-4o-2024-08-06')).toBe('gpt-4o');
    expect(t.metricLabel('openai', 'gpt-4o-mini')).toBe('gpt-4o-mini');
    expect(t.metricLabel('openai', 'gpt-4o-tenant-secret-123')).toBe('gpt-4o');
    expect(t.metricLabel('openai-compatible', 'llama-3-70b')).toBe('llama');
    expect(t.metricLabel('openai', 'whatever-i-like')).toBe('other');
  });
});
