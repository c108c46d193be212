import type { RunSnapshot } from '@agentloop/protocol';
import { COUNT_WATCH_MS, storedCount } from './partition-count.js';
import { hashPartition, homePartition, newRunIdIn } from './partition-names.js';
import { IDEMPOTENCY_TTL_S } from './create-run-args.js';
import type { RunStore } from './run-store.js';
import type { ListCursor } from './run-store-types.js';
import { RunScheduler } from './run-scheduler.js';
import type { QueueSet } from './queues.js';
import { ThreadStore } from './thread-store.js';

/**
 * Claims a placement (KEYS[1..3]: a given run id's, an idempotency key's, a thread's, in that priority; ARGV[2..4]
 * each one's TTL in s, 0 for one the run does not have; ARGV[5] the partition count): the partition the first existing
 * claim names, else ARGV[1] (none given: nil); then every claim the run has names it (created, or its TTL renewed).
 * Atomic, so requests that race for one thread or key agree. A claim naming a partition past the count (dropped by a
 * smaller count, which is adopted only once it owes nothing) counts as none and is replaced.
 */
const PLACE_LUA = `local count = tonumber(ARGV[5])
local function claimed(k)
  local v = redis.call('GET', k)
  if v and tonumber(v) < count then return v end
  return false
end
local p = false
for i = 1, 3 do
  if ARGV[i + 1] ~= '0' then
    p = claimed(KEYS[i])
    if p then break end
  end
end
if not p then
  if ARGV[1] == '' then return false end
  p = ARGV[1]
end
for i = 1, 3 do
  local ttl = tonumber(ARGV[i + 1])
  if ttl > 0 then
    local v = claimed(KEYS[i])
    if not v then redis.call('SET', KEYS[i], p, 'EX', ttl) elseif v == p then redis.call('EXPIRE', KEYS[i], ttl) end
  end
end
return p`;

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
/** How long a tenant's creation lock lasts at most (a creation takes a few ms; a holder that died frees it then). */
const LIMIT_LOCK_MS = 2_000;
const RELEASE_LUA = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`;

/** Keyset order of a tenant's index (ZRANGE REV): newer first, and ids descending within one millisecond. */
const before = (a: ListCursor, b: ListCursor) => a.score > b.score || (a.score === b.score && a.runId > b.runId);

/**
 * The deployment's partitions (SPEC §1 AGENTLOOP_PARTITIONS): where a new run goes, which partition holds a run, and
 * what spans partitions — a tenant's listing and its activeRuns count. With one partition every answer is partition 0
 * without a Redis command, so a deployment without partitions pays nothing for them.
 */
export class Partitions<P extends Partition = Partition> {
  /**
   * New runs go to partitions below this (the deployment's count, watchCount): a process with more partitions than a
   * smaller count adopted since keeps serving its runs there, and places no new ones there.
   */
  accepting: number;
  private watch: NodeJS.Timeout | null = null;

  constructor(readonly all: readonly P[]) {
    if (!all.length || all.some((p, i) => p.index !== i)) throw new Error('partitions are indexed 0..count-1');
    this.accepting = all.length;
    // cached by content (EVALSHA, loaded again after a NOSCRIPT): the claim runs once per new run
    if (all.length > 1) {
      all[0]!.store.redis.defineCommand('al_place', { numberOfKeys: 3, lua: PLACE_LUA });
      all[0]!.store.redis.defineCommand('al_release_lock', { numberOfKeys: 1, lua: RELEASE_LUA });
    }
  }

  private script(name: 'al_place' | 'al_release_lock'): (...args: Array<string | number>) => Promise<unknown> {
    const redis = this.all[0]!.store.redis as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    return redis[name]!.bind(redis);
  }

  get count(): number {
    return this.all.length;
  }

  /** Reads the deployment's partition count (adoptPartitionCount) every `everyMs`, until stopWatching. */
  watchCount(everyMs = COUNT_WATCH_MS): void {
    if (this.count === 1) return;
    const store = this.all[0]!.store;
    const read = async () => {
      const stored = await storedCount(store.redis, store.keys);
      this.accepting = stored ? Math.min(stored.count, this.count) : this.count;
    };
    void read().catch(() => undefined);
    this.watch = setInterval(() => void read().catch(() => undefined), everyMs);
    this.watch.unref();
  }

  stopWatching(): void {
    if (this.watch) clearInterval(this.watch);
  }

  /** The partition a run id names (homePartition). */
  home(runId: string): P {
    return this.all[homePartition(runId, this.count)]!;
  }

  /**
   * A read of a run (`read`: null when the partition does not hold it) from the partition that holds it: its home,
   * else — with more than one partition — another (a run id given at queue intake that its thread placed elsewhere,
   * or a run created before the partition count changed). Null when no partition has it.
   */
  async find<T>(
    runId: string,
    read: (store: RunStore) => Promise<T | null>,
  ): Promise<{ partition: P; value: T } | null> {
    const home = this.home(runId);
    if (this.count === 1) {
      const value = await read(home.store);
      return value === null ? null : { partition: home, value };
    }
    // every partition at once: as fast for a run that is not there as for one that is (no timing tells them apart)
    const values = await Promise.all(this.all.map((p) => read(p.store)));
    const i = values[home.index] !== null ? home.index : values.findIndex((v) => v !== null);
    return i < 0 ? null : { partition: this.all[i]!, value: values[i]! };
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
   * Where a new run goes, and its id. A run with a given id, an idempotency key or a thread goes where the first of
   * them was placed before (a claim in partition 0, taken atomically by the first request: requests that race agree,
   * and so do processes whatever their partition count); when none was, where the first of them already lives (a run,
   * key or thread stored before the count changed, or whose claim expired), else where its thread hashes, else its
   * key, else its given id. So a thread's runs share the thread's partition (one script keeps its one active run),
   * an idempotency key and a given run id meet their run wherever it is, and another tenant's run under the same
   * given id is found (`taken`). A run with none of them goes to a random partition, at no cost.
   */
  async place(
    tenant: string,
    opts: { threadId?: string; idempotencyKey?: string; runId?: string },
  ): Promise<{ partition: P; runId: string }> {
    const at = (p: P) => ({ partition: p, runId: opts.runId ?? newRunIdIn(p.index) });
    if (this.count === 1) return at(this.all[0]!);
    const { runId, idempotencyKey: idem, threadId: thread } = opts;
    if (runId === undefined && idem === undefined && thread === undefined)
      return at(this.all[Math.floor(Math.random() * this.accepting)]!);
    const claimed = await this.claim(opts, tenant, null);
    if (claimed !== null) return at(this.all[claimed]!);
    const stored =
      (runId !== undefined ? (await this.locate(runId))?.partition : undefined) ??
      (idem !== undefined ? await this.holding((p) => p.store.keys.idempotency(tenant, idem)) : null) ??
      (thread !== undefined ? await this.holding((p) => p.store.keys.thread(tenant, thread).runs) : null);
    const fresh =
      thread !== undefined
        ? hashPartition(`thread\u0000${tenant}\u0000${thread}`, this.accepting)
        : idem !== undefined
          ? hashPartition(`idem\u0000${tenant}\u0000${idem}`, this.accepting)
          : homePartition(runId!, this.accepting);
    return at(this.all[(await this.claim(opts, tenant, stored?.index ?? fresh))!]!);
  }

  /** The placement claim script (PLACE_LUA): the partition claimed, taking `fallback`'s claim when none is. */
  private async claim(
    o: { threadId?: string; idempotencyKey?: string; runId?: string },
    tenant: string,
    fallback: number | null,
  ): Promise<number | null> {
    const home = this.all[0]!.store;
    const k = home.keys;
    const ttl = home.retentionS;
    const keys = [
      o.runId === undefined ? k.placement('run', '') : k.placement('run', o.runId),
      o.idempotencyKey === undefined ? k.placement('idem', '', '') : k.placement('idem', tenant, o.idempotencyKey),
      o.threadId === undefined ? k.placement('thread', '', '') : k.placement('thread', tenant, o.threadId),
    ];
    const ttls = [
      o.runId === undefined ? 0 : ttl,
      o.idempotencyKey === undefined ? 0 : IDEMPOTENCY_TTL_S,
      o.threadId === undefined ? 0 : ttl,
    ];
    const r = (await this.script('al_place')(...keys, fallback ?? '', ...ttls, this.count)) as string | null;
    return r === null ? null : Number(r);
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
   * created in its partition by one script that checks the limit there, against the limit less these. Read and
   * create under the tenant's creation lock (`limitedCreation`), so no creation in another partition comes between.
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
   * Runs `create` — a count of the tenant's active runs in the other partitions, then a creation that checks the
   * limit in its own — while holding the tenant's creation lock (partition 0, `SET NX PX`), so that creations of a
   * tenant with an activeRuns limit in different partitions cannot both pass it. Only such tenants' creations wait
   * for each other, and only with more than one partition; a holder that died frees the lock after LIMIT_LOCK_MS. A
   * creation that waited that long goes on without it (hundreds of one tenant's creations at once): the limit can
   * then be passed by the creations racing past the lock.
   */
  async limitedCreation<T>(tenant: string, create: () => Promise<T>): Promise<T> {
    if (this.count === 1) return create();
    const { redis, keys } = this.all[0]!.store;
    const lock = keys.tenantCreating(tenant);
    const token = newRunIdIn(0);
    const deadline = Date.now() + LIMIT_LOCK_MS;
    while ((await redis.set(lock, token, 'PX', LIMIT_LOCK_MS, 'NX')) !== 'OK' && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 2));
    try {
      return await create();
    } finally {
      await this.script('al_release_lock')(lock, token).catch(() => undefined);
    }
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
