import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { StreamSlots, type StreamAdmission } from './stream-slots.js';
import { TenantLimiter } from './tenant-limiter.js';
import { loadConfig } from './config.js';

const lease = (a: StreamAdmission | null) => {
  if (!a?.ok) throw new Error(`expected a stream slot, got ${JSON.stringify(a)}`);
  return a.lease;
};

describe('StreamSlots: open event streams per tenant (real Redis, shared by every api process)', () => {
  let redis: Redis;
  let other: Redis;
  const prefix = testPrefix('streams');
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
    other = new Redis(testRedisUrl()); // a second api process
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
    other.disconnect();
  });

  it('gives a tenant at most `limit` slots across processes; a release frees one, once; other tenants count apart', async () => {
    const a = new StreamSlots(redis, prefix);
    const b = new StreamSlots(other, prefix);
    const first = lease(await a.open('t1', 2));
    lease(await b.open('t1', 2));
    expect(await a.open('t1', 2)).toEqual({ ok: false, open: 2 });
    expect(await b.open('t1', 2)).toEqual({ ok: false, open: 2 });
    lease(await a.open('t2', 2)); // another tenant
    first.release();
    first.release(); // a second release does not free another stream's slot
    await first.renew(); // nor does a late renewal take the slot back
    lease(await b.open('t1', 2));
    expect(await a.open('t1', 2)).toEqual({ ok: false, open: 2 });
    expect(await a.open('t3', 0)).toEqual({ ok: false, open: 0 }); // streams: 0 allows none
  });

  it('frees the slot of an api process that died (no release, no renewal) once its lease runs out; renewals keep it', async () => {
    const crashed = new StreamSlots(redis, `${prefix}-lease`, 2000);
    lease(await crashed.open('t', 1));
    expect((await crashed.open('t', 1)).ok).toBe(false);
    const t0 = Date.now();
    let admitted: StreamAdmission;
    while (!(admitted = await crashed.open('t', 1)).ok && Date.now() - t0 < 20_000)
      await new Promise((r) => setTimeout(r, 50));
    const held = lease(admitted);
    // a lease renewed well within its term outlives it
    for (let i = 0; i < 6; i++) {
      await new Promise((r) => setTimeout(r, 500));
      await held.renew();
    }
    expect((await crashed.open('t', 1)).ok).toBe(false);
    held.release();
  });

  it('TenantLimiter: the tenant entry, else `*`; no limit asks Redis nothing', async () => {
    const { tenantLimits } = loadConfig({
      AGENTLOOP_TENANT_LIMITS: '{"*":{"streams":1},"free":{"requestsPerSecond":5}}',
    });
    const limiter = new TenantLimiter(redis, `${prefix}-limiter`, tenantLimits);
    lease(await limiter.openStream('x'));
    expect(await limiter.openStream('x')).toEqual({ ok: false, open: 1 });
    expect(await limiter.openStream('free')).toBeNull(); // its own entry replaces `*`: no streams limit
  });

  it('AGENTLOOP_TENANT_LIMITS accepts `streams` (a non-negative integer)', () => {
    expect(
      loadConfig({ AGENTLOOP_TENANT_LIMITS: '{"*":{"streams":200},"a":{"streams":0,"activeRuns":3}}' }).tenantLimits,
    ).toEqual({ '*': { streams: 200 }, a: { streams: 0, activeRuns: 3 } });
    expect(() => loadConfig({ AGENTLOOP_TENANT_LIMITS: '{"*":{"streams":-1}}' })).toThrow(
      /AGENTLOOP_TENANT_LIMITS\.\*\.streams/,
    );
    expect(() => loadConfig({ AGENTLOOP_TENANT_LIMITS: '{"*":{"streams":1.5}}' })).toThrow(
      /AGENTLOOP_TENANT_LIMITS\.\*\.streams/,
    );
  });
});
