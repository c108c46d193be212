import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { RedisServer, testPrefix } from '@agentloop/testing';
import { createRedis } from './redis.js';
import { SLOTS_PER_LANE, WorkerLanes, laneCount } from './worker-lanes.js';

describe('worker lanes (real Redis, real BullMQ workers)', () => {
  let server: RedisServer;
  let redis: Redis;
  beforeAll(async () => {
    server = await RedisServer.start();
    redis = createRedis(server.url, 'agentloop-cmd');
  });
  afterAll(async () => {
    redis.disconnect();
    await server.stop();
  });

  it('takes one lane up to SLOTS_PER_LANE slots and one more for each SLOTS_PER_LANE more', () => {
    expect([1, SLOTS_PER_LANE, SLOTS_PER_LANE + 1, 10_100].map(laneCount)).toEqual([1, 1, 2, 21]);
  });

  it('runs exactly its slots at once, split over the lanes; locks held past their duration are renewed', async () => {
    const prefix = testPrefix('lanes');
    const concurrency = 2 * SLOTS_PER_LANE + 1;
    const queue = new Queue('lanes', { connection: redis, prefix });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let running = 0;
    let most = 0;
    const runs = new Map<string, number>();
    const own: Redis[] = [];
    const lanes = new WorkerLanes(
      'lanes',
      async (job) => {
        runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1);
        most = Math.max(most, ++running);
        await gate;
        running--;
      },
      concurrency,
      // a lock of 1 s, renewed every 0.5 s; checked for stalls every 0.5 s
      { prefix, lockDuration: 1000, stalledInterval: 500 },
      () => {
        const c = redis.duplicate();
        own.push(c);
        return c;
      },
    );
    const stalled: string[] = [];
    lanes.on('stalled', (id) => stalled.push(id));
    await lanes.waitUntilReady();
    expect(lanes.isRunning()).toBe(true);
    const third = Math.floor(concurrency / 3);
    expect(lanes.workers.map((w) => w.concurrency)).toEqual([third + 1, third + 1, third]);
    expect(lanes.workers.map((w) => !!w.opts.skipStalledCheck)).toEqual([false, true, true]);

    await queue.addBulk(
      Array.from({ length: concurrency + 5 }, (_, i) => ({ name: 'j', data: {}, opts: { jobId: `j${i}` } })),
    );
    for (let t0 = Date.now(); running < concurrency && Date.now() - t0 < 20_000;)
      await new Promise((r) => setTimeout(r, 50));
    expect(running).toBe(concurrency);
    await new Promise((r) => setTimeout(r, 2500)); // past the lock's duration, twice
    expect(await queue.getWaitingCount()).toBe(5);
    expect(most).toBe(concurrency);
    release();
    for (let t0 = Date.now(); (await queue.getCompletedCount()) < concurrency + 5 && Date.now() - t0 < 20_000;)
      await new Promise((r) => setTimeout(r, 50));
    expect(await queue.getCompletedCount()).toBe(concurrency + 5);
    expect(stalled).toEqual([]);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);

    await lanes.close();
    expect(lanes.isRunning()).toBe(false);
    // the lanes' own connections, ended
    for (let t0 = Date.now(); own.some((c) => c.status !== 'end') && Date.now() - t0 < 5000;)
      await new Promise((r) => setTimeout(r, 20));
    expect(own.map((c) => c.status)).toEqual(['end', 'end', 'end']);
    await queue.close();
  }, 60_000);
});
