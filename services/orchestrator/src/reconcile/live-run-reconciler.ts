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
 * move for a while, checks the job it expects — by phase: the model call's owner job, or the next iteration's flow
 * parent and its tool jobs. A missing job is published again from the checkpoint (fixed ids and compare-and-set
 * transitions make a duplicate harmless); a job that failed for good ends the run `failed`; a tool call that no runner
 * of its pool took up within the pool's bound is answered tool_error (retryable) and the iteration goes on.
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
      const lease = await this.o.store.redis.set(this.o.store.keys.reconcileLease, this.token, 'PX', Math.max(1000, this.o.everyMs - 50), 'NX');
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
    for (const runId of await this.o.store.redis.zrangebyscore(this.o.store.keys.parkedRuns, '-inf', now - this.o.everyMs, 'LIMIT', 0, 100)) {
      const f = await this.checkParked(runId).catch(() => 'ok' as const);
      if (f !== 'ok') this.o.metrics.reconciled.inc({ outcome: f });
      found.set(runId, f);
    }
    return found;
  }

  private async checkRunning(runId: string, quietSince: number): Promise<Found> {
    const st = await this.o.store.fieldsOf(runId, ['status', 'phase', 'iteration', 'owner', 'resuming', 'updatedAt', 'batch']);
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
    if (!parent) {
      // the flow that runs the batch is gone: the iteration's job publishes it again from the checkpoint (redispatch)
      await this.o.scheduler.advance(runId, k, advanceJobId(runId, k, 'reconciled'));
      this.o.logger.warn({ runId, iteration: k }, 'a running run had no job to advance it: its calls are published again from its checkpoint');
      return 'republished';
    }
    if ((await parent.getState()) === 'failed') return this.endFailed(runId, parentId, k);
    return this.checkCalls(runId, k, JSON.parse(st.batch || '[]') as string[]);
  }

  /** The job a run in its model call expects: published again when gone, the run ended when it failed for good. */
  private async expectJob(runId: string, jobId: string, k: number): Promise<Found> {
    const job = await this.o.scheduler.job(QUEUES.orchestrator, jobId);
    if (!job) {
      await this.o.scheduler.advance(runId, k, jobId);
      this.o.logger.warn({ runId, jobId }, 'a running run had no job to advance it: published again from its checkpoint');
      return 'republished';
    }
    return (await job.getState()) === 'failed' ? this.endFailed(runId, jobId, k) : 'ok';
  }

  private async endFailed(runId: string, jobId: string, k: number): Promise<Found> {
    await this.o.end.failed(runId, 'job_failed', `the job advancing iteration ${k} (${jobId}) failed for good and its run was not ended then`, k);
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
        const state = await job.getState();
        const bound = this.o.poolPickupMs[meta.pool] ?? this.o.poolPickupMs['*'] ?? 300_000;
        if (!((state === 'waiting' || state === 'prioritized') && Date.now() - job.timestamp > bound)) continue;
        if (await this.o.store.calls.closeToolCall(runId, batch[i]!, 'no_runner')) {
          this.o.logger.warn({ runId, callId: batch[i], pool: meta.pool, waitedMs: Date.now() - job.timestamp }, 'no tool-runner took the call up within its pool\'s bound: answered tool_error');
          answered = true;
        }
        await job.removeChildDependency().catch(() => false); // the iteration stops waiting for it
        await job.remove().catch(() => undefined); // (taken up meanwhile: its runner finds it answered)
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
