import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import pino from 'pino';
import { RedisReplicatedPair } from '@agentloop/testing';
import { ReplicaAck } from './replica-ack.js';

const waits = async (r: Redis) => Number(/^cmdstat_wait:calls=(\d+)/m.exec(await r.info('commandstats'))?.[1] ?? 0);

/** Behind Sentinel, a retry:"never" call's start is acknowledged by the replicas that are connected (real redis-servers). */
describe('ReplicaAck (a real primary and replica)', () => {
  let pair: RedisReplicatedPair;
  let redis: Redis;
  beforeAll(async () => {
    pair = await RedisReplicatedPair.start();
    redis = new Redis(pair.primary.url);
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await pair?.stop();
  });

  it('waits for the connected replica, and refuses a start it did not acknowledge in time', async () => {
    const ack = new ReplicaAck(redis, { replicas: 1, timeoutMs: 300 }, pino({ level: 'silent' }));
    await redis.set('start', '1');
    const before = await waits(redis);
    await ack.afterStart('run', 'call');
    expect(await waits(redis)).toBe(before + 1);
    pair.replica.signal('SIGSTOP'); // still connected as far as the primary knows, but acknowledging nothing
    try {
      await redis.set('start', '2');
      await expect(ack.afterStart('run', 'call2')).rejects.toThrow(
        /reached 0 of 1 replicas within 300 ms: not executed, retried/,
      );
    } finally {
      pair.replica.signal('SIGCONT');
    }
  });

  it('with no replica connected (the state right after a failover took the only one), a start is not held up', async () => {
    const alone = new Redis(pair.replica.url); // the replica, promoted to a primary of its own: no replica of its own
    try {
      await alone.replicaof('NO', 'ONE');
      const ack = new ReplicaAck(alone, { replicas: 1, timeoutMs: 5000 }, pino({ level: 'silent' }));
      await alone.set('start', '3');
      const before = await waits(alone);
      await ack.afterStart('run', 'call3');
      expect(await waits(alone)).toBe(before); // no WAIT: it would hold the connection 5 s and answer 0
    } finally {
      alone.disconnect();
    }
  });
});
