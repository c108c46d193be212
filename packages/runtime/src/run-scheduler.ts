import { Job } from 'bullmq';
import { contextWindowOf } from '@agentloop/llm';
import {
  DEFAULT_RESULT_TOKENS,
  DeploymentKeys,
  QUEUES,
  advanceJobId,
  compressJobId,
  expireJobId,
  summaryDeadlineJobId,
  toolJobId,
  type AdvanceJob,
  type CallToRun,
  type CompressJob,
  type RunRequest,
  type ToolJob,
} from '@agentloop/protocol';
import { DEFAULT_JOB_OPTIONS, type QueueSet } from './queues.js';
import { activeTraceparent } from './tracing/traceparent.js';

/** The trace a published job joins: the span active where it is published (none when tracing is off). */
function traced(): { trace?: string } {
  const trace = activeTraceparent();
  return trace ? { trace } : {};
}

import { TenantLoad, ranked } from './tenant-load.js';

/** min(context.toolResultMaxTokens, a quarter of the context window) */
export function maxResultTokens(request: RunRequest): number {
  return Math.max(100, Math.min(request.context.toolResultMaxTokens, Math.floor(contextWindowOf(request.model) / 4)));
}

/**
 * The most calls of one batch published without a flow parent: each of their jobs carries the batch's call ids, and
 * each result step reads the others' status, so the cost grows with the square of the batch. A model may answer with
 * thousands of calls: a larger batch goes out as a flow (its parent the next iteration's job), whose cost is linear.
 */
export const MAX_BATCH_WITHOUT_PARENT = 64;

/**
 * The only publisher of a run's jobs: its first iteration, what follows a checkpoint, a resume, a pause's expiry and
 * a summary. Job ids are fixed per run and iteration, so publishing
 * twice is harmless; every transition a job makes is a compare-and-set on the run.
 */
export class RunScheduler {
  private readonly load: TenantLoad;

  constructor(private readonly queues: QueueSet) {
    this.load = new TenantLoad(() => queues.orchestrator.backend.client, new DeploymentKeys(queues.prefix));
  }

  /**
   * Iteration 1 of a created run (again, when its creator may have died before adding it). `planned`: the creator
   * knows the first iteration is a call with tools (the run has no wall-clock budget that may run out while it
   * waits), so the job starts it without reading the run first.
   *
   * Fair scheduling (docs/ARCHITECTURE.md): every job of a run carries its tenant's load as its priority; a first
   * job ranks behind its tenant's running runs and its queued ones (this one included), so a tenant's new run does
   * not wait for another tenant's backlog, queued or running. Without a tenant (the reconciler re-adding a job a
   * crash lost, after the run waited long already) it ranks first. `queued`: the tenant's queued runs, this one
   * included, when the caller knows them (the creation answered them): the rank then costs no read.
   */
  async start(runId: string, planned = false, tenant?: string, queued?: number): Promise<void> {
    const data: AdvanceJob = {
      runId,
      iteration: 1,
      ...traced(),
      ...(planned ? { plan: { callMode: 'tools' as const, pendingFinal: '' as const, iterUsage: {} } } : {}),
    };
    const priority = tenant === undefined ? 1 : await this.load.firstJob(tenant, queued);
    await this.queues.orchestrator.add('advance', data, {
      ...DEFAULT_JOB_OPTIONS,
      jobId: advanceJobId(runId, 1),
      ...ranked(priority),
    });
  }

  /**
   * What follows iteration k's checkpoint: the calls to run, each a tool job of its pool, or the next iteration's job
   * when there are none. The calls wait for nothing else (any local call of the batch was recorded before them), so
   * they need no parent: the delivery that finds the last of them answered publishes the next iteration's job
   * (`afterBatch`; the job ids are the flow's, a duplicate is harmless). A parked run gets its expiry job instead of
   * a next job (its continuation is published by the last decision), and the calls that need no decision still run
   * at once, as children of the next iteration's job (one flow), which the resume's start may wait for.
   */
  async afterCheckpoint(
    run: { id: string; tenant: string; request: RunRequest },
    k: number,
    calls: CallToRun[],
    pausedUntil: number | null = null,
  ): Promise<void> {
    if (pausedUntil !== null) {
      await this.queues.orchestrator.add(
        'expire',
        { runId: run.id, iteration: k },
        { ...DEFAULT_JOB_OPTIONS, jobId: expireJobId(run.id, k), delay: Math.max(0, pausedUntil - Date.now()) },
      );
      if (!calls.length) return;
    }
    const cap = maxResultTokens(run.request);
    const capped = calls.map((c) => ({ ...c, maxResultTokens: cap }));
    if (pausedUntil === null && calls.length && calls.length <= MAX_BATCH_WITHOUT_PARENT)
      return this.batch(run.id, run.tenant, k, capped);
    await this.next(run.id, run.tenant, k, capped);
  }

  /**
   * Iteration k+1, once every call of iteration k's batch published by `afterCheckpoint` is answered: published by the
   * delivery that found the last one answered (a tool-runner, or the reconciler), under the trace the calls carried.
   */
  async afterBatch(runId: string, tenant: string, k: number, trace?: string): Promise<void> {
    const rank = ranked(await this.load.continuation(tenant));
    await this.queues.orchestrator.add(
      'advance',
      { runId, iteration: k + 1, ...(trace ? { trace } : {}) } satisfies AdvanceJob,
      { ...DEFAULT_JOB_OPTIONS, jobId: advanceJobId(runId, k + 1), ...rank },
    );
  }

  /** A parked run's decisions are complete: iteration k+1, with the approved calls as its children. */
  async resume(
    runId: string,
    tenant: string,
    k: number,
    approved: CallToRun[],
    plan?: AdvanceJob['plan'],
  ): Promise<void> {
    await this.next(runId, tenant, k, approved, 'resume', plan);
    // the run is no longer parked: its expire job would be a no-op; removed later, off the resume's critical path
    setTimeout(() => void this.queues.orchestrator.remove(expireJobId(runId, k)).catch(() => 0), 1000).unref();
  }

  /**
   * A summary of the run's older turns, as a child the waiting iteration job is the parent of, and its deadline: a
   * delayed job that stops the wait when no summary is recorded within `deadlineMs` (no compressor is running).
   */
  async compress(parent: Job, runId: string, k: number, tv: number, deadlineMs: number): Promise<void> {
    const data: CompressJob = { runId, iteration: k, tv, ...traced() };
    await this.queues.get(QUEUES.compressor).add('summarize', data, {
      ...DEFAULT_JOB_OPTIONS,
      jobId: compressJobId(runId, k, tv),
      parent: { id: parent.id!, queue: parent.queueQualifiedName },
      ignoreDependencyOnFailure: true,
    });
    await this.queues.orchestrator.add('summary_deadline', data, {
      ...DEFAULT_JOB_OPTIONS,
      jobId: summaryDeadlineJobId(runId, k, tv),
      delay: deadlineMs,
    });
  }

  /** A job of the deployment's queues, when it exists (for the reconciler). */
  async job(queue: string, jobId: string): Promise<Job | undefined> {
    return Job.fromId(this.queues.get(queue), jobId);
  }

  /**
   * An `advance` job for iteration k under the given id, published again by the reconciler (a duplicate is harmless);
   * it ranks first (a plain job: `ranked(1)`), having waited a reconciler's sweep already.
   */
  async advance(runId: string, k: number, jobId: string): Promise<void> {
    await this.queues.orchestrator.add('advance', { runId, iteration: k, ...traced() } satisfies AdvanceJob, {
      ...DEFAULT_JOB_OPTIONS,
      jobId,
    });
  }

  /** A parked run's expire job, due now (published again by the reconciler: its own was lost). */
  async expireNow(runId: string, k: number): Promise<void> {
    await this.queues.orchestrator.add(
      'expire',
      { runId, iteration: k },
      { ...DEFAULT_JOB_OPTIONS, jobId: expireJobId(runId, k) },
    );
  }

  /**
   * The parent of a child job stops waiting for it (BullMQ moves the parent on once no child is pending); a child
   * nobody has taken up is removed too. False when there is no such child (or it has no parent any more).
   */
  async releaseChild(queue: string, jobId: string): Promise<boolean> {
    const child = await Job.fromId(this.queues.get(queue), jobId);
    if (!child?.parentKey) return false;
    const released = await child.removeChildDependency();
    const state = await child.getState();
    if (state === 'waiting' || state === 'delayed' || state === 'prioritized')
      await child.remove().catch(() => undefined); // taken up meanwhile: its worker finds it moot
    return released;
  }

  /**
   * A batch's calls as tool jobs without a parent, each naming the batch (`ToolJob.batch`), ranked as the next
   * iteration would be: one job add a call where a flow adds the parent, links each child to it and moves the parent
   * on when they are done (docs/BENCHMARKS.md, issue 21: 17 Redis commands a call fewer).
   */
  private async batch(runId: string, tenant: string, k: number, calls: CallToRun[]): Promise<void> {
    const rank = ranked(await this.load.continuation(tenant));
    const batch = calls.map((c) => c.callId);
    const trace = traced();
    const job = (c: CallToRun) => ({
      name: 'tool',
      data: {
        runId,
        tenantId: tenant,
        callId: c.callId,
        name: c.name,
        arguments: c.arguments,
        iteration: k,
        maxResultTokens: c.maxResultTokens ?? DEFAULT_RESULT_TOKENS,
        ...trace,
        batch,
      } satisfies ToolJob,
      opts: { ...DEFAULT_JOB_OPTIONS, jobId: toolJobId(runId, c.callId), ...rank },
    });
    const pools = new Map<string, CallToRun[]>();
    for (const c of calls) pools.set(c.pool, [...(pools.get(c.pool) ?? []), c]);
    await Promise.all(
      [...pools].map(([pool, cs]) => {
        const queue = this.queues.get(QUEUES.tools(pool));
        if (cs.length > 1) return queue.addBulk(cs.map(job));
        const { name, data, opts } = job(cs[0]!);
        return queue.add(name, data, opts);
      }),
    );
  }

  private async next(
    runId: string,
    tenant: string,
    k: number,
    calls: CallToRun[],
    suffix = '',
    plan?: AdvanceJob['plan'],
  ): Promise<void> {
    const trace = traced();
    const data: AdvanceJob = { runId, iteration: k + 1, ...trace, ...(plan ? { plan } : {}) };
    const rank = ranked(await this.load.continuation(tenant));
    const opts = { ...DEFAULT_JOB_OPTIONS, jobId: advanceJobId(runId, k + 1, suffix), ...rank };
    if (!calls.length) {
      await this.queues.orchestrator.add('advance', data, opts);
      return;
    }
    await this.queues.flows.add({
      name: 'advance',
      queueName: QUEUES.orchestrator,
      data,
      opts,
      children: calls.map((c) => ({
        name: 'tool',
        queueName: QUEUES.tools(c.pool),
        data: {
          runId,
          tenantId: tenant,
          callId: c.callId,
          name: c.name,
          arguments: c.arguments,
          iteration: k,
          maxResultTokens: c.maxResultTokens ?? DEFAULT_RESULT_TOKENS,
          ...trace,
        } satisfies ToolJob,
        opts: { ...DEFAULT_JOB_OPTIONS, jobId: toolJobId(runId, c.callId), ignoreDependencyOnFailure: true, ...rank },
      })),
    });
  }
}
