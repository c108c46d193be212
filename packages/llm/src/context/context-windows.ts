import type { ModelSpec } from '@agentloop/protocol';

/** Context windows of known models (prefix match, longest first); `model.contextWindow` overrides. */
const WINDOWS = ([
  ['gpt-4o', 128_000], ['gpt-4.1', 1_047_576], ['gpt-5', 400_000], ['o3', 200_000], ['o4-mini', 200_000], ['gpt-4-turbo', 128_000],
  ['gpt-3.5-turbo', 16_385], ['deepseek', 128_000], ['gemini-2.5', 1_048_576], ['gemini-3', 1_048_576], ['gemini-2.0', 1_048_576],
] as Array<[string, number]>).sort((a, b) => b[0].length - a[0].length);

export const DEFAULT_CONTEXT_WINDOW = 128_000;

export function contextWindowOf(model: ModelSpec): number {
  return model.contextWindow ?? WINDOWS.find(([p]) => model.name.startsWith(p))?.[1] ?? DEFAULT_CONTEXT_WINDOW;
}
