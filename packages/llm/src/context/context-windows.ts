import type { ModelSpec } from '@agentloop/protocol';
import { modelProfile } from '../model-profiles.js';

export const DEFAULT_CONTEXT_WINDOW = 128_000;

/** A model's context window: `model.contextWindow`, else its profile's, else 128k. */
export function contextWindowOf(model: ModelSpec): number {
  return (
    model.contextWindow ?? modelProfile(model.provider, model.name).profile.contextWindow ?? DEFAULT_CONTEXT_WINDOW
  );
}
