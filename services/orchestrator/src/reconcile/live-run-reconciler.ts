import type { Job } from 'bullmq';
import { QUEUES, advanceJobId, expireJobId, toolJobId } from '@agentloop/protocol';
import type { Logger, Metrics, RunScheduler, RunStore } from '@agentloop/runtime';
import { ownerJobId } from '../loop/decide-advance.js';
import type { RunEnder } from '../loop/run-ender.js';

export interface LiveRunReconcilerOptions {
  store: RunStore;
  scheduler: RunScheduler;
  end: RunEnder;
  metrics: Metrics;
  logger: Logger;
  /** How often a sweep runs (one process of the deployment sweeps per period). */
  everyMs: number;
  /** How long a tool call may wait for a runner of its pool, per pool ('*': the others). */
  poolPickupMs: Record<string, number>;
  /** Runs checked per sweep (the sweep goes on from where the last one stopped). */
  pageSize?: number;
}

type Found = 'ok' | 'republished' | 'ended' | 'answered' | 'gone';

/**
 * The one reconciler of live runs: no run stays `running` without a job that will advance it, and no parked run stays
 * parked past its expiry without its expire job. Each sweep reads a page of the running index (oldest first, going on
 * from where the last sweep stopped, so its cost is bounded whatever the number of runs) and, for a run that did not
 * move for a while, checks the job it expects — by phase: the model call's owner job, or the batch's tool jobs and the
 * next iteration's job (a flow parent, or published once the batch is answered). A missing job is published again from
 * the checkpoint (fixed ids and compare-and-set transitions make a duplicate harmless); an iteration job that failed
 * for good ends the run `failed`, a tool job that did answers its call tool_error; a tool call that no runner of its
 * pool took up within the pool's bound is answered tool_error (retryable) and the iteration goes on.
 */
export class LiveRunReconciler {
  private timer: NodeJS.Timeout | null = null;
  private cursor = -Infinity;
  private readonly token = `${process.pid}-${Math.random().toString(36).slice(2)}`;

  constructor(private readonly o: LiveRunReconcilerOptions) {}

  start(): void {
    this.timer = setInterval(() => void this.sweepIfLeader(), this.o.everyMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  isRunning(): boolean {
    return this.timer !== null;
  }

  handBack(): void {} // a sweep is short: nothing to abort

  private async sweepIfLeader(): Promise<void> {
    try {
      const lease = await this.o.store.redis.set(
        this.o.store.keys.reconcileLease,
        this.token,
        'PX',
        Math.max(1000, this.o.everyMs - 50),
        'NX',
      );
      if (lease === 'OK') await this.sweep();
    } catch (err) {
      this.o.logger.warn({ err }, 'live-run reconciliation failed');
    }
  }

  /** One sweep: returns what it found for each run it looked at (tests, logs). */
  async sweep(now = Date.now()): Promise<Map<string, Found>> {
    const found = new Map<string, Found>();
    const quietSince = now - this.o.everyMs; // a run that changed since the last sweep is moving
    const page = await this.o.store.indexes.runningSince(this.cursor, quietSince, this.o.pageSize ?? 200);
    this.cursor = page.length < (this.o.pageSize ?? 200) ? -Infinity : page.at(-1)!.since;
    for (const { runId } of page) {
      const f = await this.checkRunning(runId, quietSince).catch((err: unknown) => {
        this.o.logger.warn({ err, runId }, 'could not reconcile a running run');
        return 'ok' as const;
      });
      found.set(runId, f);
      if (f !== 'ok') this.o.metrics.reconciled.inc({ outcome: f });
    }
    for (const runId of await this.o.store.redis.zrangebyscore(
      this.o.store.keys.parkedRuns,
      '-inf',
      now - this.o.everyMs,
      'LIMIT',
      0,
      100,
    )) {
      const f = await this.checkParked(runId).catch(() => 'ok' as const);
      if (f !== 'ok') this.o.metrics.reconciled.inc({ outcome: f });
      found.set(runId, f);
    }
    return found;
  }

  private async checkRunning(runId: string, quietSince: number): Promise<Found> {
    const st = await this.o.store.fieldsOf(runId, [
      'status',
      'phase',
      'iteration',
      'owner',
      'resuming',
      'updatedAt',
      'batch',
    ]);
    if (!st || st.status !== 'running') {
      await this.o.store.redis.zrem(this.o.store.keys.runningRuns, runId); // an index entry its run left behind
      return 'gone';
    }
    if (Number(st.updatedAt ?? 0) > quietSince || st.resuming === '1') return 'ok'; // moving, or the resume reconciler's
    const k = Number(st.iteration ?? 0);
    if (st.phase === 'model') {
      const jobId = st.owner ? ownerJobId(st.owner) : advanceJobId(runId, k);
      return this.expectJob(runId, jobId, k);
    }
    if (st.phase !== 'tools') return 'ok';
    const parentId = advanceJobId(runId, k + 1);
    const parent = await this.o.scheduler.job(QUEUES.orchestrator, parentId);
    const batch = JSON.parse(st.batch || '[]') as string[];
    if (!parent) return this.checkUnparented(runId, k, batch);
    if ((await parent.getState()) === 'failed') return this.endFailed(runId, parentId, k);
    return this.checkCalls(runId, k, batch);
  }

  /** Publishes iteration k's batch again from its checkpoint: the iteration's job re-dispatches its open calls. */
  private async redispatch(runId: string, k: number): Promise<Found> {
    await this.o.scheduler.advance(runId, k, advanceJobId(runId, k, 'reconciled'));
    this.o.logger.warn(
      { runId, iteration: k },
      'a running run had no job to advance it: its calls are published again from its checkpoint',
    );
    return 'republished';
  }

  /**
   * A run in its tools phase with no job for iteration k+1: its batch's calls went out without a flow parent (the
   * delivery that answers the last one publishes that job, RunScheduler.afterBatch), or the flow that ran them is
   * gone. An open call whose tool job failed for good is answered job_failed (no parent learns of it), one whose job
   * waits past its pool's bound no_runner; a call whose job is gone is published again with the rest of the batch;
   * once every call is answered and still no job goes on, iteration k+1 is published.
   */
  private async checkUnparented(runId: string, k: number, batch: string[]): Promise<Found> {
    let answered = false;
    for (const [i, { meta, outcome }] of (await this.o.store.calls.metaAndOutcomes(runId, batch)).entries()) {
      if (!meta || outcome) continue;
      const job = await this.o.scheduler.job(QUEUES.tools(meta.pool), toolJobId(runId, batch[i]!));
      if (!job) return this.redispatch(runId, k); // (fixed job ids: the calls whose jobs are there are not run twice)
      const state = await job.getState();
      if (
        state === 'failed'
          ? await this.o.store.calls.closeToolCall(runId, batch[i]!, 'job_failed')
          : await this.pickupTimedOut(runId, batch[i]!, meta.pool, job, state)
      )
        answered = true;
    }
    if ((await this.o.store.calls.metaAndOutcomes(runId, batch)).some((c) => c.meta && !c.outcome))
      return answered ? 'answered' : 'ok';
    await this.o.scheduler.advance(runId, k + 1, advanceJobId(runId, k + 1, 'reconciled'));
    this.o.logger.warn(
      { runId, iteration: k },
      "a running run's batch was answered and no job went on: its next iteration is published",
    );
    return answered ? 'answered' : 'republished';
  }

  /** A call's tool job waiting past its pool's bound: the call is answered tool_error (no_runner) and the job removed. */
  private async pickupTimedOut(runId: string, callId: string, pool: string, job: Job, state: string): Promise<boolean> {
    const bound = this.o.poolPickupMs[pool] ?? this.o.poolPickupMs['*'] ?? 300_000;
    if (!((state === 'waiting' || state === 'prioritized') && Date.now() - job.timestamp > bound)) return false;
    const answered = await this.o.store.calls.closeToolCall(runId, callId, 'no_runner');
    if (answered)
      this.o.logger.warn(
        { runId, callId, pool, waitedMs: Date.now() - job.timestamp },
        "no tool-runner took the call up within its pool's bound: answered tool_error",
      );
    await job.removeChildDependency().catch(() => false); // the iteration stops waiting for it (a flow's child)
    await job.remove().catch(() => undefined); // (taken up meanwhile: its runner finds it answered)
    return answered;
  }

  /** The job a run in its model call expects: published again when gone, the run ended when it failed for good. */
  private async expectJob(runId: string, jobId: string, k: number): Promise<Found> {
    const job = await this.o.scheduler.job(QUEUES.orchestrator, jobId);
    if (!job) {
      await this.o.scheduler.advance(runId, k, jobId);
      this.o.logger.warn(
        { runId, jobId },
        'a running run had no job to advance it: published again from its checkpoint',
      );
      return 'republished';
    }
    return (await job.getState()) === 'failed' ? this.endFailed(runId, jobId, k) : 'ok';
  }

  private async endFailed(runId: string, jobId: string, k: number): Promise<Found> {
    await this.o.end.failed(
      runId,
      'job_failed',
      `the job advancing iteration ${k} (${jobId}) failed for good and its run was not ended then`,
      k,
    );
    return 'ended';
  }

  /** The batch's calls still unanswered: a tool job gone, or waiting past its pool's bound, is answered tool_error. */
  private async checkCalls(runId: string, k: number, batch: string[]): Promise<Found> {
    if (!batch.length) return 'ok';
    const recorded = await this.o.store.calls.metaAndOutcomes(runId, batch);
    let answered = false;
    for (const [i, { meta, outcome }] of recorded.entries()) {
      if (!meta || outcome) continue;
      const job = await this.o.scheduler.job(QUEUES.tools(meta.pool), toolJobId(runId, batch[i]!));
      if (job) {
        if (await this.pickupTimedOut(runId, batch[i]!, meta.pool, job, await job.getState())) answered = true;
      } else if (await this.o.store.calls.closeToolCall(runId, batch[i]!, 'job_failed')) answered = true;
    }
    if (!answered) return 'ok';
    // every call answered, but the flow parent may still wait for a child that is gone for good: an iteration job of
    // its own goes on instead (only then: one that started while calls still run would answer them as failed)
    if ((await this.o.store.calls.metaAndOutcomes(runId, batch)).some((c) => c.meta && !c.outcome)) return 'answered';
    await this.o.scheduler.advance(runId, k + 1, advanceJobId(runId, k + 1, 'reconciled'));
    return 'answered';
  }

  /** A parked run past its expiry: its expire job must exist (it ends the pause). */
  private async checkParked(runId: string): Promise<Found> {
    const st = await this.o.store.fieldsOf(runId, ['status', 'iteration']);
    if (!st || st.status !== 'paused') return 'ok';
    const k = Number(st.iteration ?? 0);
    if (await this.o.scheduler.job(QUEUES.orchestrator, expireJobId(runId, k))) return 'ok';
    await this.o.scheduler.expireNow(runId, k);
    this.o.logger.warn({ runId, iteration: k }, 'a parked run past its expiry had no expire job: published again');
    return 'republished';
  }
}
