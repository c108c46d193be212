import { abortableSleep } from './model-chain.js';
import { LlmError, type ProviderGate } from './types.js';

export type SlotAnswer =
  { kind: 'taken'; release: () => Promise<void> } | { kind: 'busy' } | { kind: 'rate'; waitMs: number };

export interface GateOptions {
  /** A rate wait up to this long is waited out in place; longer ones are handed back to the caller [1000]. */
  waitInPlaceMs?: number;
  /** How soon a caller that found every slot busy should come back [250, jittered]. */
  busyRetryMs?: number;
  onThrottled?: (provider: string, limit: 'concurrency' | 'rate') => void;
}

/**
 * A ProviderGate over a slot store (e.g. Redis, shared by every orchestrator). Busy slots and long rate waits
 * become a `throttled` rate_limit error whose retryAfterMs tells the caller when to come back — the orchestrator
 * turns it into a delayed job, so nobody holds a worker while a provider is saturated.
 */
export function slotGate(
  tryAcquire: (provider: string) => Promise<SlotAnswer | null>,
  opts: GateOptions = {},
): ProviderGate {
  const inPlace = opts.waitInPlaceMs ?? 1000;
  const busyMs = opts.busyRetryMs ?? 250;
  return {
    async acquire(provider, signal) {
      for (;;) {
        const slot = await tryAcquire(provider);
        if (!slot) return async () => {};
        if (slot.kind === 'taken') return slot.release;
        if (slot.kind === 'rate' && slot.waitMs <= inPlace) {
          await abortableSleep(slot.waitMs, signal);
          continue;
        }
        opts.onThrottled?.(provider, slot.kind === 'busy' ? 'concurrency' : 'rate');
        const retryAfterMs = slot.kind === 'busy' ? Math.round(busyMs * (0.5 + Math.random())) : slot.waitMs;
        throw new LlmError(
          'rate_limit',
          `${provider}: held back by AGENTLOOP_PROVIDER_LIMITS (${slot.kind === 'busy' ? 'every concurrency slot is in use' : 'rate'})`,
          {
            retryAfterMs,
            throttled: slot.kind === 'busy' ? 'concurrency' : 'rate',
          },
        );
      }
    },
  };
}
