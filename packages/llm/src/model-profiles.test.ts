import { describe, expect, it } from 'vitest';
import { modelProfile } from './model-profiles.js';
import { PriceTable } from './pricing.js';
import { contextWindowOf } from './context/context-windows.js';
import { encodingOf } from './context/token-counter.js';
import { isOpenAIReasoningModel } from './providers/openai/openai-client.js';

describe('model profiles: one table per provider, the longest prefix wins', () => {
  it.each([
    ['openai', 'gpt-4o-mini-2024-07-18', 'gpt-4o-mini', { contextWindow: 128_000, encoding: 'o200k_base' }],
    ['openai', 'gpt-5.4-mini', 'gpt-5', { reasoning: true, contextWindow: 400_000 }],
    ['openai', 'gpt-5-chat-latest', 'gpt-5-chat', { encoding: 'o200k_base' }],
    ['openai', 'o3-pro', 'o3', { reasoning: true }],
    ['openai-compatible', 'gpt-4.1', 'gpt-4.1', { contextWindow: 1_047_576 }],
    ['deepseek', 'deepseek-chat', 'deepseek-chat', { contextWindow: 128_000 }],
    ['google', 'gemini-3-flash-preview', 'gemini-3-flash', { gemini3: true }],
    ['google', 'gemini-2.5-flash', 'gemini-2.5-flash', { contextWindow: 1_048_576 }],
  ] as const)('%s %s → row %s', (provider, model, row, expected) => {
    const { name, profile } = modelProfile(provider, model);
    expect(name).toBe(row);
    expect(profile).toMatchObject(expected);
  });

  it('knows nothing of names outside its tables, except that later Gemini versions behave as 3', () => {
    expect(modelProfile('openai', 'my-finetune')).toEqual({ name: null, profile: {} });
    expect(modelProfile('deepseek', 'gpt-4o')).toEqual({ name: null, profile: {} }); // tables are per provider
    expect(modelProfile('google', 'gemini-4-ultra').profile.gemini3).toBe(true);
    expect(modelProfile('google', 'gemini-flash-latest').profile.gemini3).toBeUndefined();
  });

  it('is what prices, windows, tokenizers and capabilities read', () => {
    const prices = new PriceTable();
    expect(prices.price('openai', 'gpt-4o-mini')).toEqual({ input: 0.15, output: 0.6, cachedInput: 0.075 });
    expect(prices.metricLabel('google', 'gemini-2.5-flash-001')).toBe('gemini-2.5-flash');
    expect(prices.metricLabel('openai', 'anything-else')).toBe('other');
    expect(contextWindowOf({ provider: 'google', name: 'gemini-3-pro-preview', params: {} })).toBe(1_048_576);
    expect(contextWindowOf({ provider: 'openai', name: 'gpt-4o', contextWindow: 4096, params: {} })).toBe(4096);
    expect(encodingOf({ provider: 'openai', name: 'gpt-3.5-turbo', params: {} })).toBe('cl100k_base');
    expect(encodingOf({ provider: 'google', name: 'gemini-2.5-flash', params: {} })).toBeNull();
    expect([
      isOpenAIReasoningModel('gpt-5-mini'),
      isOpenAIReasoningModel('gpt-5-chat'),
      isOpenAIReasoningModel('gpt-4o'),
    ]).toEqual([true, false, false]);
  });
});
