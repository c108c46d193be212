import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisSentinelFixture } from '@agentloop/testing';
import { createRedis } from './redis.js';

/**
 * ioredis ends a Sentinel connection for good when its reconnect is cut short while it asks the sentinels for the
 * primary (the failover detector of the connection before disconnecting it): a real Sentinel group of this machine's
 * redis-server, the race made on purpose.
 */
describe('a Sentinel connection that ioredis ended on its own', () => {
  let group: RedisSentinelFixture;
  beforeAll(async () => {
    group = await RedisSentinelFixture.start();
  }, 90_000);
  afterAll(() => group?.stop());

  const sentinels = () =>
    group.seeds.split(',').map((a) => ({ host: a.split(':')[0]!, port: Number(a.split(':')[1]) }));

  /** The connection drops; its reconnect is cut short while it resolves the primary: ioredis sets it `end`. */
  async function cutReconnectShort(r: Redis): Promise<void> {
    await r.ping();
    const connecting = new Promise<void>((resolve) => r.once('connecting', () => resolve()));
    const ended = new Promise<void>((resolve) => r.once('end', () => resolve()));
    (r as unknown as { stream: { destroy(): void } }).stream.destroy();
    await connecting;
    (r as unknown as { connector: { disconnect(): void } }).connector.disconnect();
    await ended;
  }

  it('stays ended with ioredis alone: every command fails at once (the defect)', async () => {
    const r = new Redis({
      sentinels: sentinels(),
      name: group.name,
      maxRetriesPerRequest: null,
      failoverDetector: true,
    });
    r.on('error', () => undefined);
    try {
      await cutReconnectShort(r);
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(r.status).toBe('end');
      await expect(r.ping()).rejects.toThrow('Connection is closed.');
    } finally {
      r.disconnect();
    }
  });

  it('connects again through createRedis, and so do its duplicates, also after their owner closed and reopened them; a close the process asks for still ends it', async () => {
    const r = createRedis({ kind: 'sentinel', sentinels: sentinels(), name: group.name, url: 'redis://' }, 'test');
    const dup = r.duplicate();
    r.on('error', () => undefined);
    dup.on('error', () => undefined);
    try {
      for (const c of [r, dup]) {
        await cutReconnectShort(c);
        await new Promise<void>((resolve) => c.once('ready', () => resolve()));
        expect(await c.ping()).toBe('PONG');
      }
      // closed and connected again by its owner (BullMQ does this with its blocking connection): kept as before
      dup.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 100));
      await dup.connect();
      await cutReconnectShort(dup);
      await new Promise<void>((resolve) => dup.once('ready', () => resolve()));
      expect(await dup.ping()).toBe('PONG');
      await r.quit();
      dup.disconnect();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect([r.status, dup.status]).toEqual(['end', 'end']);
    } finally {
      r.disconnect();
      dup.disconnect();
    }
  });
});
