import type { LlmUsage } from './types.js';

/** USD per million tokens: [prompt, completion, cached prompt]. Prefix match on the model name, longest first. */
const PRICES: Array<[string, number, number, number]> = [
  ['gpt-4o-mini', 0.15, 0.6, 0.075],
  ['gpt-4o', 2.5, 10, 1.25],
  ['gpt-4.1-nano', 0.1, 0.4, 0.025],
  ['gpt-4.1-mini', 0.4, 1.6, 0.1],
  ['gpt-4.1', 2, 8, 0.5],
  ['gpt-5-nano', 0.05, 0.4, 0.005],
  ['gpt-5-mini', 0.25, 2, 0.025],
  ['gpt-5', 1.25, 10, 0.125],
  ['o4-mini', 1.1, 4.4, 0.275],
  ['o3', 2, 8, 0.5],
  ['deepseek-chat', 0.28, 0.42, 0.028],
  ['deepseek-reasoner', 0.28, 0.42, 0.028],
  ['deepseek-v4-flash', 0.28, 0.42, 0.028],
  ['deepseek-v4-pro', 0.55, 2.19, 0.14],
  ['gemini-2.5-flash-lite', 0.1, 0.4, 0.025],
  ['gemini-2.5-flash', 0.3, 2.5, 0.075],
  ['gemini-2.5-pro', 1.25, 10, 0.31],
  ['gemini-3-flash', 0.5, 3, 0.05],
  ['gemini-3-pro', 2, 12, 0.2],
].sort((a, b) => (b[0] as string).length - (a[0] as string).length) as Array<[string, number, number, number]>;

export interface ModelPrice {
  /** USD per million prompt tokens (the uncached part). */
  input: number;
  /** USD per million completion tokens (reasoning included). */
  output: number;
  /** USD per million cached prompt tokens [input]. */
  cachedInput?: number;
}

/**
 * Model prices: the built-in table (prefix match on the model name, longest first) extended by the operator's
 * AGENTLOOP_MODEL_PRICES (`{"provider/model": {input, output, cachedInput}}`, exact model or prefix, longest first,
 * consulted first). A model with no price costs 0 — which is why intake refuses `maxCostUsd` for it.
 */
export class PriceTable {
  private readonly extra: Array<[string, ModelPrice]>;

  constructor(extra: Record<string, ModelPrice> = {}) {
    this.extra = Object.entries(extra).sort((a, b) => b[0].length - a[0].length);
  }

  price(provider: string, model: string): ModelPrice | null {
    return this.match(provider, model)?.price ?? null;
  }

  /** The table entry a model is priced by: its name (the prefix that matched) and its price. */
  private match(provider: string, model: string): { name: string; price: ModelPrice } | null {
    const full = `${provider}/${model}`;
    const own = this.extra.find(([key]) => full.startsWith(key));
    if (own) return { name: own[0].slice(own[0].indexOf('/') + 1), price: own[1] };
    const row = PRICES.find(([prefix]) => model.startsWith(prefix));
    return row ? { name: row[0], price: { input: row[1], output: row[2], cachedInput: row[3] } } : null;
  }

  /**
   * A model name as a metric label: the price-table entry it matched (`gpt-4o-2024-08-06` → `gpt-4o`), any other as
   * `other` — model names come from requests, and a label per name a tenant invents would grow the metrics without
   * bound (or carry what the tenant wrote into an unauthenticated endpoint).
   */
  metricLabel(provider: string, model: string): string {
    return this.match(provider, model)?.name ?? 'other';
  }

  /** Cost of one call in USD; cached prompt tokens at the cached rate. */
  cost(provider: string, model: string, usage: LlmUsage): number {
    const p = this.price(provider, model);
    if (!p) return 0;
    const uncached = Math.max(0, usage.promptTokens - usage.cachedTokens);
    return (uncached * p.input + usage.cachedTokens * (p.cachedInput ?? p.input) + usage.completionTokens * p.output) / 1e6;
  }
}
