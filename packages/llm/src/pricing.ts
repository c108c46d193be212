import type { LlmUsage } from './types.js';
import { modelProfile } from './model-profiles.js';

export interface ModelPrice {
  /** USD per million prompt tokens (the uncached part). */
  input: number;
  /** USD per million completion tokens (reasoning included). */
  output: number;
  /** USD per million cached prompt tokens [input]. */
  cachedInput?: number;
}

const MATCH_CACHE_SIZE = 1024;

/**
 * Model prices: the built-in model profiles (model-profiles.ts: per provider, longest prefix) extended by the operator's
 * AGENTLOOP_MODEL_PRICES (`{"provider/model": {input, output, cachedInput}}`, exact model or prefix, longest first,
 * consulted first). A model with no price costs 0 — which is why intake refuses `maxCostUsd` for it.
 */
export class PriceTable {
  private readonly extra: Array<[string, ModelPrice]>;
  /** match() by `provider/model`: every iteration prices and labels its model several times. Bounded (names come from requests). */
  private readonly matched = new Map<string, Map<string, { name: string; price: ModelPrice } | null>>();
  private matchedCount = 0;

  constructor(extra: Record<string, ModelPrice> = {}) {
    this.extra = Object.entries(extra).sort((a, b) => b[0].length - a[0].length);
  }

  price(provider: string, model: string): ModelPrice | null {
    return this.match(provider, model)?.price ?? null;
  }

  /** The table entry a model is priced by: its name (the prefix that matched) and its price. */
  private match(provider: string, model: string): { name: string; price: ModelPrice } | null {
    // a name that is not a string matches nothing (and is not cached: it would key the cache by its coercion)
    if (typeof provider !== 'string' || typeof model !== 'string') return null;
    let byModel = this.matched.get(provider);
    const hit = byModel?.get(model);
    if (hit !== undefined) return hit;
    if (this.matchedCount >= MATCH_CACHE_SIZE) {
      this.matched.clear();
      this.matchedCount = 0;
      byModel = undefined;
    }
    if (!byModel) this.matched.set(provider, (byModel = new Map()));
    const m = this.lookup(`${provider}/${model}`, provider, model);
    byModel.set(model, m);
    this.matchedCount++;
    return m;
  }

  private lookup(full: string, provider: string, model: string): { name: string; price: ModelPrice } | null {
    const own = this.extra.find(([key]) => full.startsWith(key));
    if (own) return { name: own[0].slice(own[0].indexOf('/') + 1), price: own[1] };
    const { name, profile } = modelProfile(provider, model);
    return name && profile.price ? { name, price: profile.price } : null;
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
    return (
      (uncached * p.input + usage.cachedTokens * (p.cachedInput ?? p.input) + usage.completionTokens * p.output) / 1e6
    );
  }
}
