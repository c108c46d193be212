import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { RunStore } from '../run-store.js';

/**
 * A describe block's real Redis and RunStore under a fresh prefix (`name`), removed after it. Read them inside tests
 * (they exist from beforeAll on).
 */
export function useTestStore(name: string): {
  readonly redis: Redis;
  readonly store: RunStore;
  readonly prefix: string;
} {
  const prefix = testPrefix(name);
  const ctx = { prefix } as { redis: Redis; store: RunStore; prefix: string };
  beforeAll(() => {
    ctx.redis = new Redis(testRedisUrl());
    ctx.store = new RunStore(ctx.redis, prefix);
  });
  afterAll(async () => {
    await cleanupPrefix(ctx.redis, prefix);
    ctx.redis.disconnect();
  });
  return ctx;
}
