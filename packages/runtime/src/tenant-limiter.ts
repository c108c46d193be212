import type { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';
import type { TenantLimit } from './config.js';
import { StreamSlots, type StreamAdmission } from './stream-slots.js';

/*
  Token bucket, one atomic step on the Redis clock (every api process shares it and agrees on the time).
  KEYS[1] bucket hash {tokens, at}   ARGV[1] refill per second   ARGV[2] bucket size
  Returns {1, 0} when a token was taken, {0, waitMs} when the bucket is empty (the next token in waitMs).
*/
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(b[1]), tonumber(b[2])
if not tokens or not at then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local ok, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return { ok, wait }
`;

export type TenantAdmission = { ok: true } | { ok: false; retryAfterMs: number };

/**
 * Per-tenant limits (AGENTLOOP_TENANT_LIMITS): the tenant's own entry, else `*`. The request rate costs one Redis
 * round trip per request for tenants with a rate (none for the others); activeRuns is enforced by the create script;
 * open event streams are leases in Redis (StreamSlots).
 */
export class TenantLimiter {
  private readonly keys: DeploymentKeys;
  private readonly streams: StreamSlots;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly limits: Record<string, TenantLimit>,
  ) {
    this.keys = new DeploymentKeys(prefix);
    this.streams = new StreamSlots(redis, prefix);
    redis.defineCommand('al_tenant_take', { numberOfKeys: 1, lua: TAKE_LUA });
  }

  limitFor(tenant: string): TenantLimit | null {
    // own properties only: a tenant named `constructor` or `__proto__` must not find Object.prototype's members
    const own = (k: string) => (Object.hasOwn(this.limits, k) ? this.limits[k]! : null);
    return own(tenant) ?? own('*');
  }

  /** The activeRuns cap of a tenant, or null. */
  activeRuns(tenant: string): number | null {
    return this.limitFor(tenant)?.activeRuns ?? null;
  }

  /** A slot for one more open event stream, or a refusal at the tenant's `streams` limit; null: no such limit. */
  async openStream(tenant: string): Promise<StreamAdmission | null> {
    const limit = this.limitFor(tenant)?.streams;
    return limit === undefined ? null : this.streams.open(tenant, limit);
  }

  async admitRequest(tenant: string): Promise<TenantAdmission> {
    const rate = this.limitFor(tenant)?.requestsPerSecond;
    if (!rate) return { ok: true };
    const burst = this.limitFor(tenant)?.burst ?? Math.max(1, Math.ceil(rate));
    const take = (
      this.redis as unknown as {
        al_tenant_take: (key: string, rate: number, burst: number) => Promise<[number, number]>;
      }
    ).al_tenant_take;
    const [ok, wait] = await take.call(this.redis, this.keys.tenantBucket(tenant), rate, burst);
    return ok === 1 ? { ok: true } : { ok: false, retryAfterMs: Number(wait) };
  }
}
