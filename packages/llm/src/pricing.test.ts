import { describe, expect, it } from 'vitest';
import { PriceTable } from './pricing.js';
import { modelProfile } from './model-profiles.js';

describe('prices and profiles of a model name a response reported (untrusted input)', () => {
  const usage = { promptTokens: 1_000_000, completionTokens: 1_000_000, reasoningTokens: 0, cachedTokens: 0 };

  it('a name that is not a string matches nothing: no throw, no price, the `other` label, cost 0', () => {
    const prices = new PriceTable({ 'openai/gpt-4o': { input: 1, output: 1 } });
    for (const model of [123, null, undefined, { name: 'gpt-4o' }, ['gpt-4o']] as unknown as string[]) {
      expect(() => modelProfile('openai', model)).not.toThrow();
      expect(modelProfile('openai', model)).toEqual({ name: null, profile: {} });
      expect(prices.price('openai', model)).toBeNull();
      expect(prices.metricLabel('openai', model)).toBe('other');
      expect(prices.cost('openai', model, usage)).toBe(0);
    }
    // a well-formed name still prices and labels as before (a non-string one did not poison the cache)
    expect(prices.metricLabel('openai', 'gpt-4o-2024-08-06')).toBe('gpt-4o');
    expect(prices.cost('openai', 'gpt-4o', usage)).toBe(2);
  });

  it('a provider name that is an Object.prototype key is a provider with no table', () => {
    for (const provider of ['__proto__', 'constructor', 'toString']) {
      expect(modelProfile(provider, 'gpt-4o')).toEqual({ name: null, profile: {} });
      expect(new PriceTable().metricLabel(provider, 'gpt-4o')).toBe('other');
    }
  });
});
