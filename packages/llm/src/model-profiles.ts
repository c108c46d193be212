import type { Provider } from '@agentloop/protocol';

/** What this build knows of a model: its price, its window, its tokenizer and the capabilities the adapters ask. */
export interface ModelProfile {
  /** USD per million tokens: prompt (uncached), completion (reasoning included), cached prompt. */
  price?: { input: number; output: number; cachedInput: number };
  contextWindow?: number;
  /** The public BPE of an OpenAI model (exact token counts); others are estimated and calibrated by usage. */
  encoding?: 'o200k_base' | 'cl100k_base';
  /** OpenAI's o-series and gpt-5 family: no `stop`; encrypted reasoning items round-trip on the Responses API. */
  reasoning?: boolean;
  /** Gemini 3 and later: every function call's thoughtSignature must come back; responseJsonSchema beside tools. */
  gemini3?: boolean;
}

const price = (input: number, output: number, cachedInput: number) => ({ price: { input, output, cachedInput } });
const o200k = { encoding: 'o200k_base' } as const;
const reasoning = { ...o200k, reasoning: true };

/** One table per provider; a model matches the row of its longest prefix. */
const PROFILES: Record<'openai' | 'deepseek' | 'google', Array<[prefix: string, profile: ModelProfile]>> = {
  openai: [
    ['gpt-4o-mini', { ...price(0.15, 0.6, 0.075), contextWindow: 128_000, ...o200k }],
    ['gpt-4o', { ...price(2.5, 10, 1.25), contextWindow: 128_000, ...o200k }],
    ['chatgpt-4o', { contextWindow: 128_000, ...o200k }],
    ['gpt-4.1-nano', { ...price(0.1, 0.4, 0.025), contextWindow: 1_047_576, ...o200k }],
    ['gpt-4.1-mini', { ...price(0.4, 1.6, 0.1), contextWindow: 1_047_576, ...o200k }],
    ['gpt-4.1', { ...price(2, 8, 0.5), contextWindow: 1_047_576, ...o200k }],
    ['gpt-4.5', { contextWindow: 128_000, ...o200k }],
    ['gpt-4-turbo', { contextWindow: 128_000, encoding: 'cl100k_base' }],
    ['gpt-4', { encoding: 'cl100k_base' }],
    ['gpt-3.5-turbo', { contextWindow: 16_385, encoding: 'cl100k_base' }],
    ['gpt-5-chat', { contextWindow: 128_000, ...o200k }],
    ['gpt-5-nano', { ...price(0.05, 0.4, 0.005), contextWindow: 400_000, ...reasoning }],
    ['gpt-5-mini', { ...price(0.25, 2, 0.025), contextWindow: 400_000, ...reasoning }],
    ['gpt-5', { ...price(1.25, 10, 0.125), contextWindow: 400_000, ...reasoning }],
    ['o4-mini', { ...price(1.1, 4.4, 0.275), contextWindow: 200_000, ...reasoning }],
    ['o4', { contextWindow: 200_000, ...reasoning }],
    ['o3', { ...price(2, 8, 0.5), contextWindow: 200_000, ...reasoning }],
    ['o1', { contextWindow: 200_000, ...reasoning }],
  ],
  deepseek: [
    ['deepseek-chat', { ...price(0.28, 0.42, 0.028), contextWindow: 128_000 }],
    ['deepseek-reasoner', { ...price(0.28, 0.42, 0.028), contextWindow: 128_000 }],
    ['deepseek-v4-flash', { ...price(0.28, 0.42, 0.028), contextWindow: 128_000 }],
    ['deepseek-v4-pro', { ...price(0.55, 2.19, 0.14), contextWindow: 128_000 }],
    ['deepseek', { contextWindow: 128_000 }],
  ],
  google: [
    ['gemini-2.5-flash-lite', { ...price(0.1, 0.4, 0.025), contextWindow: 1_048_576 }],
    ['gemini-2.5-flash', { ...price(0.3, 2.5, 0.075), contextWindow: 1_048_576 }],
    ['gemini-2.5-pro', { ...price(1.25, 10, 0.31), contextWindow: 1_048_576 }],
    ['gemini-2.5', { contextWindow: 1_048_576 }],
    ['gemini-2.0', { contextWindow: 1_048_576 }],
    ['gemini-3-flash', { ...price(0.5, 3, 0.05), contextWindow: 1_048_576, gemini3: true }],
    ['gemini-3-pro', { ...price(2, 12, 0.2), contextWindow: 1_048_576, gemini3: true }],
    ['gemini-3', { contextWindow: 1_048_576, gemini3: true }],
  ],
};
for (const rows of Object.values(PROFILES)) rows.sort((a, b) => b[0].length - a[0].length);

/** Gemini versions after the table (gemini-4…) behave as 3 does; unknown names as 2.x (the conservative choice). */
const GEMINI_3_OR_LATER = /^gemini-(?:[3-9]|[1-9]\d)(?:[.-]|$)/;

/** The table an OpenAI-compatible server is read from: the OpenAI names it serves (its own models match nothing). */
const tableOf = (provider: Provider | string) =>
  provider === 'openai-compatible'
    ? PROFILES.openai
    : Object.hasOwn(PROFILES, provider)
      ? PROFILES[provider as keyof typeof PROFILES]
      : [];

/** A model's profile and the table row it matched (`name`: the prefix, a bounded metric label), or an empty one. */
export function modelProfile(
  provider: Provider | string,
  model: string,
): { name: string | null; profile: ModelProfile } {
  // a name that is not a string (a provider's response is untrusted input) is a model this build knows nothing of
  if (typeof model !== 'string') return { name: null, profile: {} };
  const row = tableOf(provider).find(([prefix]) => model.startsWith(prefix));
  const profile: ModelProfile = row ? { ...row[1] } : {};
  if (provider === 'google' && profile.gemini3 === undefined && GEMINI_3_OR_LATER.test(model)) profile.gemini3 = true;
  return { name: row?.[0] ?? null, profile };
}
