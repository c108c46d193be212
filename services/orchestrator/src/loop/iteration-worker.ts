import { DelayedError, UnrecoverableError, WaitingChildrenError, type Job } from 'bullmq';
import { AdvanceJobSchema, QUEUES } from '@agentloop/protocol';
import {
  HandedBackError,
  currentSegmentTp,
  traceIdOf,
  traceOfJob,
  withTraceparent,
  workerOptions,
  WorkerLanes,
} from '@agentloop/runtime';
import { jobDelivery } from './job-delivery.js';
import type { IterationWorkerOptions } from './iteration-worker-options.js';
import { TimerJobs } from './timer-jobs.js';
import { loopParts, type LoopParts } from './loop-parts.js';
import { IterationPass, type IterationOutcome } from './iteration-pass.js';

export type { IterationWorkerOptions } from './iteration-worker-options.js';

/**
 * The orchestrator's worker shell: one `advance` job per iteration, the one place the loop meets BullMQ. Each job's
 * iteration runs in one pass (IterationPass: decide, start, call the model, checkpoint, dispatch); the shell carries
 * out the waits it returns (a summary to wait for, a delay), and, when every call ran here (local tools) and the
 * worker has room, runs the next iteration in the same job (Continuations). Every state change is a compare-and-set,
 * so duplicate or retried jobs are harmless.
 */
export class IterationWorker {
  private worker: WorkerLanes | null = null;
  readonly isRunning = (): boolean => !!this.worker?.isRunning(); // readiness: it takes jobs
  private readonly parts: LoopParts;
  private readonly pass: IterationPass;
  private readonly timers: TimerJobs;
  private handingBack = false;

  constructor(private readonly o: IterationWorkerOptions) {
    this.parts = loopParts(o, () => this.handingBack);
    this.pass = new IterationPass(this.parts);
    this.timers = new TimerJobs(o.store, o.scheduler, o.decisions, o.metrics, o.logger);
  }

  async start(): Promise<void> {
    const channel = this.o.store.keys.cancelChannel;
    this.o.subscriber.on('message', (ch: string, runId: string) => {
      if (ch === channel) this.parts.streamer.abort(runId, new Error('run cancelled'));
    });
    await this.o.subscriber.subscribe(channel);
    this.worker = new WorkerLanes(
      QUEUES.orchestrator,
      (job, token) => this.process(job, token),
      this.o.concurrency,
      { prefix: this.o.prefix, ...workerOptions(this.o.lockMs) },
      () => this.o.redis.duplicate(),
    );
    this.worker.on('error', (err) => this.o.logger.error({ err }, 'orchestrator worker error'));
    this.worker.on('stalled', () => this.o.metrics.jobsStalled.inc({ queue: QUEUES.orchestrator }));
    this.worker.on('failed', (job, err) => {
      // a job that failed for good ends its run (a malformed job names no run: nothing to end)
      const data = AdvanceJobSchema.safeParse(job?.data);
      if (
        !job ||
        job.name !== 'advance' ||
        !data.success ||
        (job.attemptsMade < (job.opts.attempts ?? 1) && err.name !== 'UnrecoverableError')
      )
        return;
      this.parts.end
        .failedJob(job.id, data.data.runId, err)
        .catch((e: unknown) =>
          this.o.logger.error({ err: e, runId: data.data.runId }, 'could not end the run of a failed iteration job'),
        );
    });
    await this.worker.waitUntilReady();
  }

  async close(): Promise<void> {
    this.parts.continuations.stop();
    await this.worker?.close();
  }

  /** Drain deadline passed: abort the model streams in flight; their jobs are retried elsewhere from the same state. */
  handBack(): void {
    this.handingBack = true;
    this.parts.continuations.stop();
    this.parts.streamer.abortAll(new HandedBackError());
  }

  /** One job: its iteration, and the ones it goes on to in place (Continuations), each timed on its own. */
  private async process(job: Job, token?: string): Promise<void> {
    if (await this.timers.handle(job)) return;
    const advance = AdvanceJobSchema.safeParse(job.data);
    if (!advance.success) throw new UnrecoverableError(`malformed advance job: ${advance.error.message}`); // retrying cannot fix it
    const { runId, trace } = advance.data;
    const delivery = jobDelivery(job, token, this.o.redis, this.o.lockMs);
    const { continuations } = this.parts;
    continuations.begin();
    try {
      for (
        let k: number | undefined = advance.data.iteration, plan = advance.data.plan;
        k !== undefined;
        plan = undefined
      ) {
        const t0 = performance.now();
        const parent = await traceOfJob(trace, async () =>
          currentSegmentTp(await this.o.store.fieldsOf(runId, ['tp', 'seg'])),
        ); // SPEC §8
        const at = k;
        const outcome = await withTraceparent(parent, () => this.pass.advance(delivery, runId, at, plan));
        const modelSeconds = typeof outcome === 'number' ? outcome : 0; // not overhead
        const overheadSeconds = Math.max(0, (performance.now() - t0) / 1000 - modelSeconds);
        this.o.metrics.observeIterationOverhead(overheadSeconds, traceIdOf(parent));
        this.o.onIterationTimed?.({ runId, iteration: k, startedAt: t0, overheadSeconds, modelSeconds });
        if (!(await this.carryOut(job, token, outcome))) k = continuations.following(delivery); // else: the same iteration again
      }
    } finally {
      continuations.end(delivery);
    }
  }

  /**
   * What the iteration asked of the shell. A summary: the compress job is added as this job's child and the job waits
   * for it holding no worker slot (BullMQ runs it again then); when the child is already done, true: run the same
   * iteration again now. A delay: the job waits as a delayed job.
   */
  private async carryOut(job: Job, token: string | undefined, outcome: IterationOutcome): Promise<boolean> {
    if (typeof outcome !== 'object') return false;
    if (outcome.kind === 'again') {
      if (this.handingBack) throw new HandedBackError(); // past the drain deadline: its redelivery runs it elsewhere
      return true;
    }
    if (outcome.kind === 'delay') {
      if (!token) throw new Error('rate limited: no lock token to defer the job with');
      await job.moveToDelayed(Date.now() + outcome.ms, token);
      throw new DelayedError();
    }
    await this.o.scheduler.compress(job, outcome.runId, outcome.k, outcome.tv, outcome.deadlineMs);
    if (token && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
    return true;
  }
}
