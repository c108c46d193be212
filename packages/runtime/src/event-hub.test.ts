import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { testPrefix, testRedisUrl } from '@agentloop/testing';
import { EventHub } from './event-hub.js';

const until = async (what: string, fn: () => boolean | Promise<boolean>) => {
  const t0 = Date.now();
  while (!(await fn())) {
    if (Date.now() - t0 > 5_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('EventHub (real Redis pub/sub)', () => {
  let sub: Redis;
  let pub: Redis;
  const prefix = testPrefix();
  beforeAll(() => {
    sub = new Redis(testRedisUrl());
    pub = new Redis(testRedisUrl());
  });
  afterAll(() => {
    sub.disconnect();
    pub.disconnect();
  });
  const numsub = async (channel: string) => Number(((await pub.pubsub('NUMSUB', channel)) as [string, number])[1]);

  it('one subscription per channel; each listener is removed once, by its own unsubscribe, however often it is called', async () => {
    const hub = new EventHub(sub);
    const channel = `${prefix}:ev`;
    let calls = 0;
    const listener = () => void calls++;
    // the same function, for two streams (two handlers may pass an equal listener)
    const [u1, u2] = await Promise.all([hub.subscribe(channel, listener), hub.subscribe(channel, listener)]);
    expect(await numsub(channel)).toBe(1);
    await pub.publish(channel, '1');
    await until('both notified', () => calls === 2);
    await u1();
    await u1(); // again: nothing more
    await pub.publish(channel, '2');
    await until('the other still notified', () => calls === 3);
    expect(await numsub(channel)).toBe(1);
    await u2();
    expect(await numsub(channel)).toBe(0);
    // a new subscriber after the last one left subscribes again
    const u3 = await hub.subscribe(channel, listener);
    expect(await numsub(channel)).toBe(1);
    await u3();
    expect(await numsub(channel)).toBe(0);
  });

  it('a SUBSCRIBE that fails leaves nothing behind: the next subscriber subscribes again', async () => {
    const broken = new Redis(testRedisUrl());
    const hub = new EventHub(broken);
    const channel = `${prefix}:ev2`;
    const real = broken.subscribe.bind(broken);
    let failNext = true;
    broken.subscribe = ((...args: Parameters<Redis['subscribe']>) => {
      if (failNext) {
        failNext = false;
        return Promise.reject(new Error('connection lost'));
      }
      return real(...args);
    }) as Redis['subscribe'];
    try {
      await expect(hub.subscribe(channel, () => {})).rejects.toThrow('connection lost');
      let notified = false;
      const u = await hub.subscribe(channel, () => void (notified = true));
      expect(await numsub(channel)).toBe(1);
      await pub.publish(channel, '1');
      await until('notified', () => notified);
      await u();
      expect(await numsub(channel)).toBe(0);
    } finally {
      broken.disconnect();
    }
  });
});
