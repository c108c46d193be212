import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { DecisionJobSchema, MAX_JSON_DEPTH, QUEUES, jsonDepth } from '@agentloop/protocol';
import { IDLE_BLOCK_S, workerTakingJobs, type Logger, type Partitions } from '@agentloop/runtime';
import type { ServicePartition } from '../service-partition.js';
import type { DecisionResult } from './decision-service.js';

/**
 * Decisions published by backends on the `decisions` queue (SPEC §5): the same code path as the HTTP API. The job's
 * return value is the outcome (`applied` / `conflict` / `invalid` / `not_found`), never a retry loop.
 */
export class DecisionsWorker {
  private worker: Worker | null = null;
  private reconciler: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    /** The deployment's own prefix: the `decisions` queue is one for every partition. */
    private readonly prefix: string,
    /** Where a decision goes: the partition that holds its run. */
    private readonly partitions: Partitions<ServicePartition>,
    /** The partitions whose resuming runs this process looks after (the ones it serves). */
    private readonly served: readonly ServicePartition[],
    private readonly logger: Logger,
    private readonly reconcileEveryMs = 10_000,
  ) {}

  async start(): Promise<void> {
    this.worker = new Worker(QUEUES.decisions, (job) => this.process(job), {
      connection: this.redis.duplicate(),
      prefix: this.prefix,
      concurrency: 20,
      drainDelay: IDLE_BLOCK_S,
    });
    this.worker.on('error', (err) => this.logger.error({ err }, 'decisions worker error'));
    await this.worker.waitUntilReady();
    this.reconciler = setInterval(() => void this.reconcile(), this.reconcileEveryMs);
    this.reconciler.unref();
  }

  handBack(): void {} // short jobs: nothing worth aborting

  /** Whether its worker takes jobs (readiness). */
  isRunning(): boolean {
    return workerTakingJobs(this.worker);
  }

  async close(): Promise<void> {
    if (this.reconciler) clearInterval(this.reconciler);
    await this.worker?.close();
  }

  private async process(job: Job): Promise<DecisionResult> {
    if (jsonDepth(job.data) > MAX_JSON_DEPTH)
      return { kind: 'invalid', message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, details: [] };
    if (JSON.stringify(job.data).length > 1_048_576)
      return { kind: 'invalid', message: 'the decision job is larger than 1 MiB (the HTTP body limit)', details: [] };
    const parsed = DecisionJobSchema.safeParse(job.data);
    if (!parsed.success) return { kind: 'invalid', message: 'not a valid decision job', details: parsed.error.issues };
    const p = await this.partitions.route(parsed.data.runId);
    if (!p) return { kind: 'not_found' };
    return p.decisions.apply(parsed.data.tenantId, parsed.data.runId, parsed.data.decisions);
  }

  /**
   * A process that flipped a run to resuming and died before publishing its continuation leaves it in the
   * resuming set: publish it again (idempotent). Only runs whose decisions are complete are looked at — parked
   * runs are never polled.
   */
  async reconcile(): Promise<void> {
    try {
      for (const p of this.served)
        for (const runId of await p.store.indexes.resumingSince(Date.now() - this.reconcileEveryMs))
          await p.decisions.publishResume(runId);
    } catch (err) {
      this.logger.warn({ err }, 'resume reconciliation failed');
    }
  }
}
