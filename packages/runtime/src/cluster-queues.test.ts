import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, QueueEvents, Worker } from 'bullmq';
import { Cluster } from 'ioredis';
import { RedisClusterFixture } from '@agentloop/testing';
import { QueueSet } from './queues.js';
import { createRedis } from './redis.js';
import { keyPrefix, redisTargetFromEnv } from './redis-target.js';

/**
 * REDIS_CLUSTER_NODES, the connection side: the one factory builds an ioredis Cluster, and BullMQ's queues, flows,
 * workers and queue events work on a real cluster (3 primaries, 3 replicas) under the prefix derived from the plain
 * AGENTLOOP_PREFIX; the plain prefix itself does not.
 */
describe('BullMQ on a Redis Cluster (real cluster of this machine)', () => {
  let cluster: RedisClusterFixture;
  let conn: Cluster;
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(async () => {
    cluster = await RedisClusterFixture.start();
    const target = redisTargetFromEnv({ REDIS_CLUSTER_NODES: cluster.seeds }, 'redis://127.0.0.1:6379');
    if (target.kind !== 'cluster') throw new Error('not a cluster target');
    conn = createRedis(target, 'cluster-test');
  }, 120_000);
  afterAll(async () => {
    for (const close of closers.reverse()) await close().catch(() => undefined);
    conn?.disconnect();
    await cluster?.stop();
  });

  it('the factory gives a cluster connection: three primaries, each with its replica', async () => {
    expect(conn).toBeInstanceOf(Cluster);
    for (const k of ['k-a', 'k-b', 'k-c', 'k-d']) expect(await conn.set(k, '1')).toBe('OK');
    expect(conn.nodes('master')).toHaveLength(3);
    const topology = String(await conn.call('CLUSTER', 'NODES'))
      .split('\n')
      .filter(Boolean);
    expect(topology.filter((l: string) => /\bslave\b/.test(l))).toHaveLength(3);
  });

  it('jobs and flows (a parent in one queue, children in two others) complete under the derived prefix', async () => {
    const target = redisTargetFromEnv({ REDIS_CLUSTER_NODES: cluster.seeds }, 'redis://127.0.0.1:6379');
    const prefix = keyPrefix('agentloop-ct', target);
    expect(prefix).toBe('{agentloop-ct}');
    const queues = new QueueSet(conn, prefix);
    closers.push(() => queues.close());
    const seen: string[] = [];
    const results = new Map<string, unknown>();
    for (const name of ['orchestrator', 'tools-default', 'tools-sandbox']) {
      const w = new Worker(
        name,
        async (job) => {
          seen.push(`${name}:${job.name}`);
          return name === 'orchestrator' ? Object.keys(await job.getChildrenValues()).length : job.data.n * 2;
        },
        { connection: conn.duplicate(), prefix, concurrency: 4 },
      );
      w.on('completed', (job, value) => results.set(job.id!, value));
      closers.push(() => w.close());
    }
    // from the stream's start: a job that completes before the reader's first read is still seen
    const events = new QueueEvents('orchestrator', { connection: conn.duplicate(), prefix, lastEventId: '0-0' });
    closers.push(() => events.close());
    const completedEvents = new Set<string>();
    events.on('completed', ({ jobId }) => completedEvents.add(jobId));
    const until = async (what: string, ok: () => boolean) => {
      for (const t0 = Date.now(); !ok(); await new Promise((r) => setTimeout(r, 50)))
        if (Date.now() - t0 > 60_000) throw new Error(`${what}: not within 60 s`);
    };

    await queues.orchestrator.add('advance', { n: 1 }, { jobId: 'lone', priority: 3 });
    await queues.flows.add({
      name: 'parent',
      queueName: 'orchestrator',
      data: {},
      opts: { jobId: 'parent-1', priority: 2 },
      children: [
        { name: 'tool', queueName: 'tools-default', data: { n: 1 }, opts: { jobId: 'c1' } },
        { name: 'tool', queueName: 'tools-sandbox', data: { n: 2 }, opts: { jobId: 'c2' } },
      ],
    });
    await until('the jobs and the flow', () => results.has('lone') && results.has('parent-1'));
    expect([results.get('lone'), results.get('parent-1'), results.get('c1'), results.get('c2')]).toEqual([0, 2, 2, 4]);
    expect(seen.sort()).toEqual([
      'orchestrator:advance',
      'orchestrator:parent',
      'tools-default:tool',
      'tools-sandbox:tool',
    ]);
    await until(
      'their completed events (QueueEvents)',
      () => completedEvents.has('lone') && completedEvents.has('parent-1'),
    );
  }, 150_000);

  it('the plain prefix does not work on a cluster: its queue keys fall in several slots', async () => {
    const q = new Queue('plain', { connection: conn.duplicate(), prefix: 'agentloop-ct' });
    closers.push(() => q.close());
    await expect(q.add('x', {})).rejects.toThrow(/CROSSSLOT|slot/i);
  }, 30_000);
});
