import { newRunId, randomToken, type RunSnapshot } from '@agentloop/protocol';
import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';
import type { RedisTarget } from './redis-target.js';
import type { RunIndexes } from './run-indexes.js';
import type { RunStore } from './run-store.js';
import type { ListCursor } from './run-store-types.js';
import { RunScheduler } from './run-scheduler.js';
import type { QueueSet } from './queues.js';
import { ThreadStore } from './thread-store.js';

/** AGENTLOOP_PARTITIONS is 1 to this. */
export const MAX_PARTITIONS = 64;

/**
 * The prefix each partition's keys and queues live under (SPEC §1). Partition 0 keeps the deployment's own prefix, so
 * one partition is exactly the layout of a deployment without partitions, and runs created before partitions stay
 * where they are; partition p ≥ 1 lives under `<prefix>-<p>`. In cluster mode each is its own hash tag
 * (`{agentloop-2}`): a partition's keys share one slot, and partitions land on different shards.
 */
export function partitionPrefixes(prefix: string, target: RedisTarget, count: number): string[] {
  return Array.from({ length: count }, (_, p) => partitionPrefix(prefix, target, p));
}

/** Partition p's prefix (partitionPrefixes). */
export function partitionPrefix(prefix: string, target: RedisTarget, p: number): string {
  const name = p === 0 ? prefix : `${prefix}-${p}`;
  return target.kind === 'cluster' ? `{${name}}` : name;
}

/** A run id this product drew for partition 0 (and every id it drew before partitions). */
const DRAWN = /^run_[A-Za-z0-9]{20}$/;
/** A run id this product drew for partition p ≥ 1: the partition is part of the id, whatever the count becomes. */
const DRAWN_IN = /^run_p([1-9]\d?)_[A-Za-z0-9]{20}$/;

/** A new run id of partition p. */
export function newRunIdIn(p: number): string {
  return p === 0 ? newRunId() : `run_p${p}_${randomToken(20)}`;
}

/** 32-bit FNV-1a of a string's UTF-16 units: stable across processes and builds. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** Where a key of the deployment's choosing (a thread, an idempotency key, a run id given at queue intake) hashes to. */
export function hashPartition(key: string, count: number): number {
  return count === 1 ? 0 : fnv1a(key) % count;
}

/**
 * The partition a run id names: the one it was drawn for, or (an id given at queue intake) the one it hashes to.
 * A drawn id names its partition under any partition count; a given id is placed by its thread when it has one, and
 * hashes elsewhere once the count changes, so it is looked for in the other partitions too (Partitions.locate).
 */
export function homePartition(runId: string, count: number): number {
  if (count === 1) return 0;
  const m = DRAWN_IN.exec(runId);
  if (m) return Number(m[1]) < count ? Number(m[1]) : hashPartition(runId, count);
  return DRAWN.test(runId) ? 0 : hashPartition(runId, count);
}

/** One partition's stores and publishers. */
export interface Partition {
  readonly index: number;
  readonly prefix: string;
  readonly store: RunStore;
  readonly threads: ThreadStore;
  /** Its queues (orchestrator, tools-*, compressor, webhooks), and the one publisher of its runs' jobs. */
  readonly queues: QueueSet;
  readonly scheduler: RunScheduler;
}

/** Partition `index` of a store and the queues under its prefix: its scheduler and thread store made from them. */
export function partitionOf(store: RunStore, queues: QueueSet, index = 0): Partition {
  return {
    index,
    prefix: store.prefix,
    store,
    queues,
    scheduler: new RunScheduler(queues), // the only publisher of the partition's runs' jobs
    threads: new ThreadStore(store.redis, store.keys, store.retentionS),
  };
}

/** A run found, with the partition that holds it. */
export interface Located<P extends Partition> {
  partition: P;
  tenant: string;
}

const ACTIVE_STATUSES = ['queued', 'running', 'paused'] as const;

/** Keyset order of a tenant's index (ZRANGE REV): newer first, and ids descending within one millisecond. */
const before = (a: ListCursor, b: ListCursor) => a.score > b.score || (a.score === b.score && a.runId > b.runId);

/**
 * The deployment's partitions (SPEC §1 AGENTLOOP_PARTITIONS): where a new run goes, which partition holds a run, and
 * what spans partitions — a tenant's listing and its activeRuns count. With one partition every answer is partition 0
 * without a Redis command, so a deployment without partitions pays nothing for them.
 */
export class Partitions<P extends Partition = Partition> {
  constructor(readonly all: readonly P[]) {
    if (!all.length || all.some((p, i) => p.index !== i)) throw new Error('partitions are indexed 0..count-1');
  }

  get count(): number {
    return this.all.length;
  }

  /** The partition a run id names (homePartition). */
  home(runId: string): P {
    return this.all[homePartition(runId, this.count)]!;
  }

  /**
   * A read of a run (`read`: null when the partition does not hold it) from the partition that holds it: its home
   * first, then — with more than one partition — the others (a run id given at queue intake that its thread placed
   * elsewhere, or a run created before the partition count changed). Null when no partition has it.
   */
  async find<T>(
    runId: string,
    read: (store: RunStore) => Promise<T | null>,
  ): Promise<{ partition: P; value: T } | null> {
    const home = this.home(runId);
    const value = await read(home.store);
    if (value !== null) return { partition: home, value };
    if (this.count === 1) return null;
    const others = this.all.filter((p) => p !== home);
    const values = await Promise.all(others.map((p) => read(p.store)));
    const i = values.findIndex((v) => v !== null);
    return i < 0 ? null : { partition: others[i]!, value: values[i]! };
  }

  /** The partition that holds a run, and the run's tenant; null when none does. */
  async locate(runId: string): Promise<Located<P> | null> {
    const found = await this.find(runId, (store) => store.tenantOf(runId));
    return found && { partition: found.partition, tenant: found.value };
  }

  /**
   * The partition a step of a run goes to: with one partition, partition 0 without a read (the step's own script
   * answers for a missing run); else the one that holds it, null when none does.
   */
  async route(runId: string): Promise<P | null> {
    return this.count === 1 ? this.all[0]! : ((await this.locate(runId))?.partition ?? null);
  }

  /**
   * Where a new run goes, and its id. A run of a thread goes where the thread is (its rules are kept by one script on
   * the thread's and the run's keys), else where its idempotency key is, else where a run id given at queue intake
   * names; a run with none of them goes to a random partition. A thread or key not seen yet goes where it hashes; one
   * already stored stays where it is, whatever the partition count has become since.
   */
  async place(
    tenant: string,
    opts: { threadId?: string; idempotencyKey?: string; runId?: string },
  ): Promise<{ partition: P; runId: string }> {
    const at = (p: P) => ({ partition: p, runId: opts.runId ?? newRunIdIn(p.index) });
    if (this.count === 1) return at(this.all[0]!);
    if (opts.threadId !== undefined)
      return at(
        await this.whereStored(
          (p) => p.store.keys.thread(tenant, opts.threadId!).runs,
          `thread\u0000${tenant}\u0000${opts.threadId}`,
        ),
      );
    if (opts.idempotencyKey !== undefined && opts.runId === undefined)
      return at(
        await this.whereStored(
          (p) => p.store.keys.idempotency(tenant, opts.idempotencyKey!),
          `idem\u0000${tenant}\u0000${opts.idempotencyKey}`,
        ),
      );
    if (opts.runId !== undefined) return at((await this.locate(opts.runId))?.partition ?? this.home(opts.runId));
    return at(this.all[Math.floor(Math.random() * this.count)]!);
  }

  /** The partition whose key (keyIn) exists, else the one `hashKey` hashes to. */
  private async whereStored(keyIn: (p: P) => string, hashKey: string): Promise<P> {
    return (await this.holding(keyIn)) ?? this.all[hashPartition(hashKey, this.count)]!;
  }

  /** The first partition whose key (keyIn) exists. */
  private async holding(keyIn: (p: P) => string): Promise<P | null> {
    const exists = await Promise.all(this.all.map((p) => p.store.redis.exists(keyIn(p))));
    const i = exists.findIndex((n) => n > 0);
    return i < 0 ? null : this.all[i]!;
  }

  /** The partition that holds a tenant's thread, or null when no partition does. */
  async threadOf(tenant: string, threadId: string): Promise<P | null> {
    if (this.count === 1) return this.all[0]!;
    return this.holding((p) => p.store.keys.thread(tenant, threadId).runs);
  }

  /**
   * The tenant's active runs (queued, running, paused: what activeRuns counts) in every partition but one: a run is
   * created in its partition by one script that checks the limit there, against the limit less these. Two creations
   * racing in two partitions may both pass; a tenant can go over its limit by at most the creations in flight.
   */
  async activeRunsOutside(tenant: string, partition: P): Promise<number> {
    if (this.count === 1) return 0;
    const counts = await Promise.all(
      this.all
        .filter((p) => p !== partition)
        .flatMap((p) => ACTIVE_STATUSES.map((s) => p.store.redis.zcard(p.store.keys.tenantRunsByStatus(tenant, s)))),
    );
    return counts.reduce((a, b) => a + b, 0);
  }

  /**
   * A tenant's runs across partitions, newest first: each partition's page from the same keyset cursor, merged. A
   * partition whose page ended early (the scan bound) holds rows not read yet past its cursor, so the merged page
   * stops at the earliest such cursor: a client that follows nextCursor sees every run once.
   */
  async listRuns(
    tenant: string,
    opts: { status?: string; limit: number; cursor?: ListCursor | null },
  ): Promise<{ runs: RunSnapshot[]; nextCursor: ListCursor | null }> {
    if (this.count === 1) return this.all[0]!.store.listRuns(tenant, opts);
    const pages = await Promise.all(this.all.map((p) => p.store.listRuns(tenant, opts)));
    // the furthest every partition has read to (null: each read to its end)
    let frontier: ListCursor | null = null;
    for (const page of pages)
      if (page.nextCursor && (frontier === null || before(page.nextCursor, frontier))) frontier = page.nextCursor;
    const rows = pages
      .flatMap((page) => page.runs.map((run, i) => ({ run, at: page.positions[i]! })))
      .filter((r) => frontier === null || !before(frontier, r.at))
      .sort((a, b) => (before(a.at, b.at) ? -1 : 1));
    const taken = rows.slice(0, opts.limit);
    if (rows.length > opts.limit) return { runs: taken.map((r) => r.run), nextCursor: taken.at(-1)!.at };
    return { runs: taken.map((r) => r.run), nextCursor: frontier };
  }
}

/**
 * Adopts a process's partition count as the deployment's (partition 0's `partitions` key, the most it was started
 * with). More partitions are adopted at once: runs stay where they are (a drawn id names its partition; a given one is
 * looked for in every partition) and new runs spread over all. Fewer only once the partitions dropped owe nothing —
 * no live run, no outbox entry — else the reason the process must not start: it would orphan those runs. (Their
 * finished runs are no longer served; their keys expire with their retention.)
 */
export async function adoptPartitionCount(
  redis: Redis,
  keys: DeploymentKeys,
  count: number,
  indexesOf: (partition: number) => RunIndexes,
): Promise<string | null> {
  const stored = Number((await redis.get(keys.partitionCount)) ?? 1);
  const before = Number.isInteger(stored) && stored >= 1 ? stored : 1;
  if (count < before) {
    for (let p = count; p < before; p++) {
      const owed = await indexesOf(p).liveCount();
      if (owed > 0)
        return `AGENTLOOP_PARTITIONS=${count}, but partition ${p} of the ${before} this deployment ran with still holds ${owed} live run(s) or outbox entries: start with AGENTLOOP_PARTITIONS=${before} until they end (docs/OPERATIONS.md, Partitions)`;
    }
  }
  if (count !== before) await redis.set(keys.partitionCount, String(count));
  return null;
}
