import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { ToolCatalog, type CatalogEntry } from './tool-catalog.js';

describe('ToolCatalog (real Redis)', () => {
  let redis: Redis;
  const prefix = testPrefix('catalog');
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
  });
  afterAll(async () => {
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const entry = (name: string): CatalogEntry => ({ name, description: name, parameters: { type: 'object' }, sideEffect: 'read', pool: 'default', timeoutMs: 1000, retry: 'safe' });

  it('callers that find the cache expired at once share one read; a published change is seen by the next read', async () => {
    const reads: string[] = [];
    const counting = new Proxy(redis, {
      get: (t, p) => (p === 'hgetall' ? (key: string) => (reads.push(key), t.hgetall(key)) : Reflect.get(t, p)),
    });
    const catalog = new ToolCatalog(counting, prefix, 50);
    await catalog.publish([entry('a'), entry('b')]);
    const all = await Promise.all(Array.from({ length: 20 }, () => catalog.all()));
    expect(reads).toHaveLength(1);
    expect(all.every((m) => [...m.keys()].sort().join() === 'a,b')).toBe(true);
    await new Promise((r) => setTimeout(r, 60)); // expired
    await redis.hset(catalog.key, 'c', JSON.stringify(entry('c')));
    expect((await Promise.all([catalog.get('c'), catalog.get('c')])).map((e) => e?.name)).toEqual(['c', 'c']);
    expect(reads).toHaveLength(2);
    await redis.hset(catalog.key, 'd', '{"not":"an entry"}');
    await new Promise((r) => setTimeout(r, 60));
    expect(await catalog.get('d')).toBeUndefined(); // an entry that does not parse is not offered
  });
});
