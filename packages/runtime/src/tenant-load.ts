import type { DeploymentKeys } from '@agentloop/protocol';

/** BullMQ's lowest job priority (its PRIORITY_LIMIT); 1 is the highest. */
export const LOWEST_PRIORITY = 2 ** 21 - 1;

const clamp = (n: number) => Math.min(LOWEST_PRIORITY, Math.max(1, n));

/**
 * A job's BullMQ options for its rank `priority`: a rank of 1 (the highest) is a plain job, every other one a
 * prioritized job. The same order: a worker empties BullMQ's plain list before it takes any prioritized job, so a
 * plain job goes before every job of rank 2 and more, as one of rank 1 does — only the order among rank 1's jobs and
 * the queue's timers (plain already) differs (first in, first out, or a flow parent ahead of them: BullMQ puts a
 * parent whose children are done at the front of the list), and those are equals. A plain job costs three Redis
 * commands fewer than a prioritized one: no priority counter (`INCR`) to add it, and a worker takes it with the
 * `RPOPLPUSH` it tries first, not with a `ZPOPMIN` and an `LPUSH` after it (docs/BENCHMARKS.md, issue 21) — every
 * job of a tenant running one run at a time, and of the reconcilers.
 */
export const ranked = (priority: number): { priority?: number } => (priority > 1 ? { priority } : {});

/**
 * A tenant's load, as the BullMQ priority of its jobs (fair scheduling, docs/ARCHITECTURE.md): the tenant's running
 * runs, read at most once per `maxAgeMs` per tenant and process (one `ZCARD`, shared by every job published
 * meanwhile), so a job's cost does not grow with the number of jobs published.
 */
export class TenantLoad {
  private readonly cache = new Map<string, { at: number; running: Promise<number> }>();

  constructor(
    private readonly client: () => Promise<{ zcard(key: string): Promise<number> }>,
    private readonly keys: DeploymentKeys,
    private readonly maxAgeMs = 250,
  ) {}

  /** The priority of a job of a run already started: the tenant's running runs (this one included). */
  async continuation(tenant: string): Promise<number> {
    return clamp(await this.running(tenant));
  }

  /**
   * The priority of a run's first job: behind the tenant's running runs and its queued runs (this one included),
   * read fresh, so a tenant's burst ranks its runs one after the other. `queued`: that count, when the caller read it
   * in the step that created the run (createRun answers it), else read here.
   */
  async firstJob(tenant: string, queued?: number): Promise<number> {
    const [running, waiting] = await Promise.all([
      this.running(tenant),
      queued ?? this.client().then((c) => c.zcard(this.keys.tenantRunsByStatus(tenant, 'queued'))),
    ]);
    return clamp(running + waiting);
  }

  private running(tenant: string): Promise<number> {
    const now = Date.now();
    const hit = this.cache.get(tenant);
    if (hit && now - hit.at < this.maxAgeMs) return hit.running;
    if (this.cache.size >= 10_000)
      for (const [t, e] of this.cache) if (now - e.at >= this.maxAgeMs) this.cache.delete(t);
    const running = this.client().then((c) => c.zcard(this.keys.tenantRunsByStatus(tenant, 'running')));
    this.cache.set(tenant, { at: now, running });
    running.catch(() => this.cache.get(tenant)?.running === running && this.cache.delete(tenant)); // a failed read is not remembered
    return running;
  }
}
