import { Worker, type Processor, type WorkerListener, type WorkerOptions } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { workerTakingJobs } from './readiness.js';

/** The slots of one lane at most: its lock renewal is one script over as many jobs, and its fetches one at a time. */
export const SLOTS_PER_LANE = 500;

/** How many lanes `concurrency` slots take: one up to SLOTS_PER_LANE, one more for each SLOTS_PER_LANE more. */
export const laneCount = (concurrency: number): number => Math.max(1, Math.ceil(concurrency / SLOTS_PER_LANE));

/**
 * One queue's worker slots as BullMQ workers ("lanes") of at most SLOTS_PER_LANE slots each, in one process. A
 * BullMQ worker takes its jobs one at a time (each a Redis round trip and an event-loop turn) and renews the locks
 * of all its jobs in one script: with 10,000 slots in one worker, jobs that became ready while the process worked
 * through a burst of model answers waited up to 500 ms for their turn, and every 7.5 s one renewal held Redis 50 ms
 * for every client. Lanes fetch side by side and renew in scripts of their own size. Only the first lane looks for
 * stalled jobs (that check reads the whole active list; one per process is enough). A deployment at the default
 * concurrency has one lane: the worker it always had. Each lane has a connection of its own (from `connection`) and
 * BullMQ's blocking one: two per lane; close() ends both.
 */
export class WorkerLanes<D = unknown> {
  readonly workers: Worker<D>[];
  /** The lanes' own connections: BullMQ leaves a connection it was given open when it closes. */
  private readonly connections: Array<Redis | Cluster> = [];

  constructor(
    queue: string,
    processor: Processor<D>,
    concurrency: number,
    opts: Omit<WorkerOptions, 'concurrency' | 'connection'>,
    connection: () => Redis | Cluster,
  ) {
    const lanes = laneCount(concurrency);
    this.workers = Array.from({ length: lanes }, (_, i) => {
      // the slots split as evenly as they go: 1,001 over 3 lanes is 334, 334, 333
      const slots = Math.floor(concurrency / lanes) + (i < concurrency % lanes ? 1 : 0);
      const own = connection();
      this.connections.push(own);
      return new Worker<D>(queue, processor, {
        ...opts,
        connection: own,
        concurrency: slots,
        ...(i > 0 ? { skipStalledCheck: true } : {}),
      });
    });
  }

  on<E extends keyof WorkerListener<D>>(event: E, listener: WorkerListener<D>[E]): this {
    for (const w of this.workers) w.on(event, listener);
    return this;
  }

  /** Every lane takes jobs (readiness). */
  isRunning(): boolean {
    return this.workers.every((w) => workerTakingJobs(w));
  }

  async waitUntilReady(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** Resolves once every lane has closed (its jobs ended), then ends the lanes' connections; a lane's error after. */
  async close(force = false): Promise<void> {
    const closed = await Promise.allSettled(this.workers.map((w) => w.close(force)));
    for (const c of this.connections) c.disconnect();
    const failed = closed.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  }
}
