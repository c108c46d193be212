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
  const entry = (name: string): CatalogEntry => ({
    name,
    description: name,
    parameters: { type: 'object' },
    sideEffect: 'read',
    pool: 'default',
    timeoutMs: 1000,
    retry: 'safe',
  });
  /** A catalog whose HGETALLs are counted. */
  const counted = (p: string, ttlMs?: number) => {
    const reads: string[] = [];
    const counting = new Proxy(redis, {
      get: (t, k) => (k === 'hgetall' ? (key: string) => (reads.push(key), t.hgetall(key)) : Reflect.get(t, k)),
    });
    return { catalog: new ToolCatalog(counting, p, ttlMs), reads };
  };

  it('callers that find the cache expired at once share one read; a published change is seen by the next read', async () => {
    const { catalog, reads } = counted(prefix, 50);
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

  it('a lookup that misses in a cache still fresh reads Redis again: a tool another process published just now is found', async () => {
    const p = testPrefix('catalog-miss');
    try {
      const { catalog, reads } = counted(p); // the default cache lifetime (2 s)
      expect((await catalog.all()).size).toBe(0); // primed empty, as in an orchestrator that started before any tool-runner
      await new ToolCatalog(redis, p).publish([entry('side_effect')]); // a tool-runner process
      expect((await catalog.get('side_effect'))?.name).toBe('side_effect');
      expect(reads).toHaveLength(2);
      expect((await catalog.all()).has('side_effect')).toBe(true); // the fresh view is the cache now
      // concurrent misses share one read, and each finds the tool
      await new ToolCatalog(redis, p).publish([entry('second')]);
      const found = await Promise.all(Array.from({ length: 10 }, () => catalog.lookup(['side_effect', 'second'])));
      expect(found.every((m) => m.get('second')?.name === 'second')).toBe(true);
      expect(reads).toHaveLength(3);
      // a name that is in no catalog costs one read per miss, never more
      expect((await catalog.lookup(['side_effect', 'ghost'])).has('ghost')).toBe(false);
      expect(reads).toHaveLength(4);
      expect(await catalog.get('ghost')).toBeUndefined();
      expect(reads).toHaveLength(5);
      await catalog.lookup(['side_effect', 'second']); // a hit reads nothing
      expect(reads).toHaveLength(5);
    } finally {
      await cleanupPrefix(redis, p);
    }
  });
});
