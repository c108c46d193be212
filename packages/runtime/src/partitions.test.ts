import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { RunRequestSchema } from '@agentloop/protocol';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { Partitions, partitionOf } from './partitions.js';
import { hashPartition, homePartition, newRunIdIn, partitionPrefixes } from './partition-names.js';
import { QueueSet } from './queues.js';
import { RunStore } from './run-store.js';
import type { ListCursor } from './run-store-types.js';

describe('which partition a run id names', () => {
  it('a drawn id names its partition under any count; a given id hashes, the same in every process', () => {
    for (let p = 0; p < 5; p++) {
      const id = newRunIdIn(p);
      for (const count of [p + 1, p + 2, 8, 64]) expect(homePartition(id, count)).toBe(p);
    }
    expect(newRunIdIn(0)).toMatch(/^run_[A-Za-z0-9]{20}$/); // partition 0's ids are the ids of a build without partitions
    expect(homePartition('order-4711', 3)).toBe(hashPartition('order-4711', 3));
    expect(homePartition('order-4711', 1)).toBe(0);
    // a drawn id of a partition the count no longer has is looked for where it hashes (and in every other)
    expect(homePartition(newRunIdIn(5), 3)).toBeLessThan(3);
    const spread = new Set(Array.from({ length: 60 }, (_, i) => hashPartition(`k${i}`, 3)));
    expect(spread).toEqual(new Set([0, 1, 2]));
  });

  it('partition 0 keeps the prefix; on a cluster each partition is its own hash tag', () => {
    expect(partitionPrefixes('al', { kind: 'url', url: '' }, 3)).toEqual(['al', 'al-1', 'al-2']);
    expect(partitionPrefixes('al', { kind: 'cluster', nodes: [], url: '' }, 2)).toEqual(['{al}', '{al-1}']);
  });
});

describe('a tenant’s listing merged over three partitions (real Redis, fast-check)', () => {
  const prefix = testPrefix('partlist');
  let redis: Redis;
  let partitions: Partitions;
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  beforeAll(() => {
    redis = new Redis(testRedisUrl());
    const stores = partitionPrefixes(prefix, { kind: 'url', url: '' }, 3).map((p) => new RunStore(redis, p));
    partitions = new Partitions(stores.map((s, i) => partitionOf(s, new QueueSet(redis, s.prefix), i)));
  });
  afterAll(async () => {
    await Promise.all(partitions.all.map((p) => p.queues.close()));
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });

  it('placement: racing requests for one new thread agree; a claim naming a dropped partition is replaced', async () => {
    const thread = `t-${Date.now()}`;
    const placed = await Promise.all(Array.from({ length: 10 }, () => partitions.place('A', { threadId: thread })));
    expect(new Set(placed.map((p) => p.partition.index)).size).toBe(1);
    const keys = partitions.all[0]!.store.keys;
    const stale = `t-stale-${Date.now()}`;
    await redis.set(keys.placement('thread', 'A', stale), '5'); // placed when the deployment had 6 partitions
    const now = await partitions.place('A', { threadId: stale });
    expect(now.partition.index).toBeLessThan(3);
    expect(await redis.get(keys.placement('thread', 'A', stale))).toBe(String(now.partition.index));
  });

  it('pages newest first, every live run of the tenant once, whatever the page size, scan bound and stale rows', async () => {
    let round = 0;
    const row = fc.record({
      partition: fc.integer({ min: 0, max: 2 }),
      ms: fc.integer({ min: 0, max: 3 }), // few distinct times: ties across and within partitions
      kind: fc.constantFrom('live', 'live', 'live', 'expired', 'taken'),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(row, { maxLength: 24 }),
        fc.integer({ min: 1, max: 6 }),
        fc.integer({ min: 2, max: 7 }),
        fc.constantFrom(undefined, 'queued'),
        async (rows, limit, scanLimit, status) => {
          const tenant = `A${round++}`;
          const expected: Array<{ id: string; at: ListCursor }> = [];
          for (const [i, r] of rows.entries()) {
            const { store } = partitions.all[r.partition]!;
            const runId = `run_m${round}_${String(i).padStart(2, '0')}`;
            await store.create({ runId, tenant, request, messages: [], bodyHash: 'h' });
            const score = 1_700_000_000_000 + r.ms;
            for (const idx of [store.keys.tenantRuns(tenant), store.keys.tenantRunsByStatus(tenant, 'queued')])
              await redis.zadd(idx, score, runId);
            if (r.kind !== 'live') await redis.del(store.keys.run(runId).state); // retention passed, not swept yet
            if (r.kind === 'taken')
              await store.create({ runId, tenant: `B${round}`, request, messages: [], bodyHash: 'h' });
            if (r.kind === 'live') expected.push({ id: runId, at: { score, runId } });
          }
          for (const p of partitions.all) p.store.listScanLimit = scanLimit;
          expected.sort((x, y) => y.at.score - x.at.score || (x.id < y.id ? 1 : -1));
          const listed: string[] = [];
          let cursor: ListCursor | null = null;
          for (let pages = 0; pages < 200; pages++) {
            const page: { runs: Array<{ id: string }>; nextCursor: ListCursor | null } = await partitions.listRuns(
              tenant,
              { limit, cursor, status },
            );
            expect(page.runs.length).toBeLessThanOrEqual(limit);
            listed.push(...page.runs.map((r) => r.id));
            cursor = page.nextCursor;
            if (!cursor) break;
          }
          expect(cursor).toBeNull();
          expect(listed).toEqual(expected.map((e) => e.id));
        },
      ),
      { numRuns: 200 },
    );
  });
});
