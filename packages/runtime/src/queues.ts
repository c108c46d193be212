import { FlowProducer, Queue, type ConnectionOptions, type DefaultJobOptions } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';

/** Job options every agentloop job gets: bounded retention, retries with backoff for infrastructure errors. */
export const DEFAULT_JOB_OPTIONS: DefaultJobOptions = {
  attempts: 8,
  backoff: { type: 'exponential', delay: 200 },
  // a finished job is gone at once: every key that names a run expires with the run (retention); duplicates stay
  // harmless because every transition is a compare-and-set on the run, not a job-id dedupe
  removeOnComplete: true,
  removeOnFail: { age: 7 * 86_400 },
};

/**
 * How long an idle worker blocks for new jobs at a time, in seconds (BullMQ: 5; Redis blocking commands longer than
 * 10 s are fragile across reconnections): it halves an idle process's wake-ups.
 */
export const IDLE_BLOCK_S = 10;

/**
 * Options of the workers that run a run's steps (iterations, tool calls, summaries). Locks: `lockMs` (renewed at
 * half of it); a stalled job (its worker died) is handed on after half of it, as often as that happens.
 */
export function workerOptions(lockMs: number) {
  return {
    lockDuration: lockMs,
    stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
    maxStalledCount: 100,
    drainDelay: IDLE_BLOCK_S,
  };
}

/** The queues and the flow producer a process publishes to, created once and shared. */
export class QueueSet {
  private readonly queues = new Map<string, Queue>();
  readonly flows: FlowProducer;

  constructor(
    private readonly connection: ConnectionOptions,
    readonly prefix: string,
  ) {
    this.flows = new FlowProducer({ connection, prefix });
  }

  get(name: string): Queue {
    let q = this.queues.get(name);
    if (!q) {
      q = new Queue(name, { connection: this.connection, prefix: this.prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
      this.queues.set(name, q);
    }
    return q;
  }

  get orchestrator(): Queue {
    return this.get(QUEUES.orchestrator);
  }

  /** Every queue this process has touched plus the fixed ones (for the queue-depth gauge). */
  known(): Queue[] {
    for (const n of [QUEUES.requests, QUEUES.orchestrator, QUEUES.decisions, QUEUES.compressor, QUEUES.webhooks])
      this.get(n);
    return [...this.queues.values()];
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((q) => q.close()));
    await this.flows.close();
  }
}
