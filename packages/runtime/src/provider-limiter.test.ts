import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { ProviderLimiter, type LimiterAnswer } from './provider-limiter.js';
import { loadConfig } from './config.js';

const taken = (a: LimiterAnswer | null) => {
  if (a?.kind !== 'taken') throw new Error(`expected a slot, got ${JSON.stringify(a)}`);
  return a;
};

describe('ProviderLimiter (real Redis, shared by every orchestrator)', () => {
  let redis: Redis;
  const prefix = testPrefix();
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('gives out at most `concurrency` slots across limiter instances; a release frees one', async () => {
    const a = new ProviderLimiter(redis, prefix, { openai: { concurrency: 2, burst: 1 } });
    const b = new ProviderLimiter(redis, prefix, { openai: { concurrency: 2, burst: 1 } }); // another process
    const s1 = taken(await a.tryAcquire('openai'));
    taken(await b.tryAcquire('openai'));
    expect(await a.tryAcquire('openai')).toEqual({ kind: 'busy' });
    expect(await b.tryAcquire('openai')).toEqual({ kind: 'busy' });
    await s1.release();
    taken(await b.tryAcquire('openai'));
    expect(await a.tryAcquire('google')).toBeNull(); // no limits configured: nothing to ask Redis
  });

  it('frees the slot of a caller that died once its lease runs out', async () => {
    const l = new ProviderLimiter(redis, `${prefix}-lease`, { deepseek: { concurrency: 1, burst: 1 } }, 1000); // a lease long enough to be busy between two calls on a loaded machine
    taken(await l.tryAcquire('deepseek'));
    expect((await l.tryAcquire('deepseek'))?.kind).toBe('busy');
    await new Promise((r) => setTimeout(r, 1100));
    taken(await l.tryAcquire('deepseek'));
    await cleanupPrefix(redis, `${prefix}-lease`);
  });

  it('spaces starts by 60000/rpm after a burst, saying how long to wait', async () => {
    // one start per second: the burst is not refilled between the four calls below, even on a loaded machine
    const l = new ProviderLimiter(redis, `${prefix}-rate`, { google: { rpm: 60, burst: 3 } });
    for (let i = 0; i < 3; i++) taken(await l.tryAcquire('google'));
    const held = await l.tryAcquire('google');
    expect(held?.kind).toBe('rate');
    const wait = (held as { waitMs: number }).waitMs;
    expect(wait).toBeGreaterThan(0);
    expect(wait).toBeLessThanOrEqual(1000); // at most one spacing
    await new Promise((r) => setTimeout(r, wait + 5));
    taken(await l.tryAcquire('google'));
    await cleanupPrefix(redis, `${prefix}-rate`);
  });

  it('validates AGENTLOOP_PROVIDER_LIMITS with a clear message', () => {
    expect(loadConfig({ AGENTLOOP_PROVIDER_LIMITS: '{"openai":{"concurrency":5,"rpm":100}}' }).providerLimits).toEqual({
      openai: { concurrency: 5, rpm: 100, burst: 1 },
    });
    expect(() => loadConfig({ AGENTLOOP_PROVIDER_LIMITS: '{"openai":{"concurrency":0}}' })).toThrow(
      /AGENTLOOP_PROVIDER_LIMITS\.openai\.concurrency/,
    );
    expect(() => loadConfig({ AGENTLOOP_PROVIDER_LIMITS: '{"anthropic":{}}' })).toThrow(/AGENTLOOP_PROVIDER_LIMITS/);
    expect(() => loadConfig({ AGENTLOOP_PROVIDER_LIMITS: 'openai=5' })).toThrow(/not JSON/);
  });
});
