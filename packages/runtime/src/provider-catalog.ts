import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';

/** How long an orchestrator's word on its providers holds (it repeats it at a third of this). */
export const PROVIDER_LEASE_MS = 180_000;

/**
 * Which model providers the deployment's orchestrators can call — the ones whose key the operator configured on them
 * (`P:providers`, provider → lease expiry in ms). Orchestrators publish it; the api reads it to refuse at intake a run
 * no orchestrator could call (rather than accept it and fail it at its first iteration), without holding any key.
 */
export class ProviderCatalog {
  private cache: { at: number; providers: Set<string> | null } | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
    private readonly ttlMs = 2000,
  ) {}

  async publish(providers: readonly string[], now = Date.now()): Promise<void> {
    if (providers.length)
      await this.redis.hset(this.keys.providers, ...providers.flatMap((p) => [p, String(now + PROVIDER_LEASE_MS)]));
  }

  /** The providers some orchestrator can call now; null when none has said (then nothing is refused for it). */
  async available(now = Date.now()): Promise<Set<string> | null> {
    if (this.cache && now - this.cache.at < this.ttlMs) return this.cache.providers;
    const leases = await this.redis.hgetall(this.keys.providers);
    const live = Object.entries(leases)
      .filter(([, until]) => Number(until) > now)
      .map(([p]) => p);
    const providers = live.length ? new Set(live) : null;
    this.cache = { at: now, providers };
    return providers;
  }
}
