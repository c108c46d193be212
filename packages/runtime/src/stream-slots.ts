import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';

/*
  The tenant's open event streams: a zset of leases scored by expiry, on the Redis clock (every api process agrees).
  Expired leases are pruned first: the streams of an api process that died free their slots within one lease.
  KEYS[1] leases (zset)   ARGV[1] lease id   ARGV[2] limit   ARGV[3] lease ms
  Returns {1, open} taken, {0, open} the tenant holds `limit` streams already.
*/
const OPEN_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local open = redis.call('ZCARD', KEYS[1])
if open >= tonumber(ARGV[2]) then return { 0, open } end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return { 1, open + 1 }
`;

/*
  Renews a lease (re-adds it when a long Redis outage let it expire: the stream is still open, so it holds a slot).
  Every lease lasts as long, so the key's TTL set here outlasts every other lease in it.
  KEYS[1] leases (zset)   ARGV[1] lease id   ARGV[2] lease ms
*/
const RENEW_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`;

/** How long a stream's slot lasts without renewal; the SSE handler renews it every third of it. */
export const STREAM_LEASE_MS = 30_000;

/** One open event stream's slot. `release` may be called any number of times; only the first counts. */
export interface StreamLease {
  renew(): Promise<void>;
  release(): void;
}

export type StreamAdmission = { ok: true; lease: StreamLease } | { ok: false; open: number };

type SlotCommands = {
  al_stream_open: (key: string, lease: string, limit: number, leaseMs: number) => Promise<[number, number]>;
  al_stream_renew: (key: string, lease: string, leaseMs: number) => Promise<number>;
};

/**
 * The `streams` limit of AGENTLOOP_TENANT_LIMITS: open event streams per tenant, counted in Redis across every api
 * process. One round trip to open, one to release, one per renewal (every 10 s) — only for tenants with the limit.
 */
export class StreamSlots {
  private readonly keys: DeploymentKeys;

  constructor(
    private readonly redis: Redis,
    prefix: string,
    private readonly leaseMs = STREAM_LEASE_MS,
  ) {
    this.keys = new DeploymentKeys(prefix);
    redis.defineCommand('al_stream_open', { numberOfKeys: 1, lua: OPEN_LUA });
    redis.defineCommand('al_stream_renew', { numberOfKeys: 1, lua: RENEW_LUA });
  }

  async open(tenant: string, limit: number): Promise<StreamAdmission> {
    const key = this.keys.tenantStreams(tenant);
    const id = randomBytes(9).toString('base64url');
    const commands = this.redis as unknown as SlotCommands;
    const [taken, open] = await commands.al_stream_open(key, id, limit, this.leaseMs);
    if (taken !== 1) return { ok: false, open: Number(open) };
    let released = false;
    return {
      ok: true,
      lease: {
        renew: async () => {
          if (!released) await commands.al_stream_renew(key, id, this.leaseMs);
        },
        release: () => {
          if (released) return;
          released = true;
          // a failed ZREM (Redis away) leaves the lease to expire by itself
          this.redis.zrem(key, id).catch(() => undefined);
        },
      },
    };
  }
}
