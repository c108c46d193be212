import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';
import type { ProviderLimits } from './config.js';

/*
  One atomic step, on the Redis clock (so every orchestrator host agrees): the concurrency lease set is pruned of
  expired leases (a dead process's calls free their slot when the lease runs out), then the rate is checked with
  GCRA (one key per provider), then the lease is taken.
  KEYS[1] in-flight leases (zset, score = expiry ms)   KEYS[2] GCRA theoretical arrival time (ms)
  ARGV[1] lease id   ARGV[2] concurrency (0 = none)   ARGV[3] lease ms   ARGV[4] spacing ms (0 = no rate)   ARGV[5] burst
  Returns {0, 0} taken, {1, 0} all slots busy, {2, waitMs} rate: next start in waitMs.
*/
const ACQUIRE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local conc = tonumber(ARGV[2])
if conc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  if redis.call('ZCARD', KEYS[1]) >= conc then return {1, 0} end
end
local spacing = tonumber(ARGV[4])
if spacing > 0 then
  local tat = tonumber(redis.call('GET', KEYS[2]) or '0')
  if tat < now then tat = now end
  local wait = tat - now - (tonumber(ARGV[5]) - 1) * spacing
  if wait > 0 then return {2, math.ceil(wait)} end
  redis.call('SET', KEYS[2], tat + spacing, 'PX', math.ceil(tat + spacing - now) + 1000)
end
if conc > 0 then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return {0, 0}
`;

/** Same shape as @agentloop/llm's SlotAnswer (runtime does not depend on llm). */
export type LimiterAnswer =
  { kind: 'taken'; release: () => Promise<void> } | { kind: 'busy' } | { kind: 'rate'; waitMs: number };

/**
 * Per-provider concurrency and rate limits shared by every orchestrator through Redis (AGENTLOOP_PROVIDER_LIMITS):
 * they keep a fleet of workers from stampeding a provider. 3 Redis commands per limited call (acquire, release),
 * none for providers without limits.
 */
export class ProviderLimiter {
  private readonly keys: DeploymentKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly limits: ProviderLimits,
    /** A lease outlives the longest model call; a crashed caller's slot frees itself after it. */
    private readonly leaseMs = 600_000,
  ) {
    this.keys = new DeploymentKeys(prefix);
    redis.defineCommand('al_provider_slot', { numberOfKeys: 2, lua: ACQUIRE_LUA });
  }

  /** null: this provider has no limits. */
  async tryAcquire(provider: string): Promise<LimiterAnswer | null> {
    const limit = this.limits[provider];
    if (!limit || (!limit.concurrency && !limit.rpm)) return null;
    const lease = randomBytes(9).toString('base64url');
    const inflight = this.keys.providerInflight(provider);
    const spacing = limit.rpm ? Math.max(1, Math.round(60_000 / limit.rpm)) : 0;
    const [code, wait] = await (
      this.redis as unknown as { al_provider_slot: (...a: Array<string | number>) => Promise<[number, number]> }
    ).al_provider_slot(
      inflight,
      this.keys.providerRate(provider),
      lease,
      limit.concurrency ?? 0,
      this.leaseMs,
      spacing,
      limit.burst,
    );
    if (code === 1) return { kind: 'busy' };
    if (code === 2) return { kind: 'rate', waitMs: wait };
    return {
      kind: 'taken',
      release: limit.concurrency ? async () => void (await this.redis.zrem(inflight, lease)) : async () => {},
    };
  }
}
