import { UnrecoverableError, Worker, type Job } from 'bullmq';
import { counterFor } from '@agentloop/llm';
import type { Redis } from 'ioredis';
import { LOCAL_POOL, QUEUES, ToolJobSchema, argumentsForDisplay, isTerminalStatus, toolErrorOutcome, type ToolJob, type ToolOutcome } from '@agentloop/protocol';
import { HandedBackError, ToolCatalog, endToolSpan, inSpan, startToolSpan, withTraceparent, workerOptions, workerTakingJobs, type LocalResult, type Logger, type Metrics, type RecordAnswer, type RunScheduler, type RunStore, recordableWithStart } from '@agentloop/runtime';
import { executeToolCall } from './execute-tool-call.js';
import type { ToolRegistry } from './registry.js';
import { lazyChild } from './lazy-logger.js';
import { ReplicaAck } from './replica-ack.js';

export interface ToolRunnerOptions {
  redis: Redis;
  /** A separate connection for pub/sub (cancellations). */
  subscriber: Redis;
  store: RunStore;
  registry: ToolRegistry;
  metrics: Metrics;
  logger: Logger;
  prefix: string;
  pools: string[];
  concurrency: number;
  lockMs: number;
  maxResultBytes?: number;
  /** Closed after the workers (the MCP servers' connections: calls in flight need them until then). */
  closeAfter?: () => Promise<void>;
  /**
   * Behind Sentinel (a primary with replicas): a `retry: "never"` call executes only once its start is on a replica
   * (`WAIT`), so a failover cannot lose the start and let a redelivery execute it again.
   */
  replicaAck?: { replicas: number; timeoutMs: number };
  /** Publishes the next iteration once a batch published without a flow parent is answered (ToolJob.batch). */
  scheduler?: Pick<RunScheduler, 'afterBatch'>;
}

/**
 * How often a tool job may stall (its runner died or hung past the lock) and be handed on before it fails: the call is
 * then answered tool_error (retryable) and the run goes on, so a tool that kills its runner cannot crash-loop a pool.
 * BullMQ fails the job at the stall after this many.
 */
export const TOOL_MAX_STALLS = 2;

/**
 * Executes tool calls from `tools-<pool>` queues. A call is executed at most once to completion: a redelivered
 * job whose call already has a result reuses it; a call cut off mid-execution runs again with the same
 * idempotency key (or is answered outcome_unknown when the tool says retry "never"). Failures are results,
 * never failed jobs, so the iteration waiting on them can never hang.
 */
export class ToolRunner {
  private readonly workers: Worker[] = [];
  private readonly inFlight = new Map<string, Set<AbortController>>();
  /** o200k BPE: exact for current OpenAI models, a close proxy for others (results are capped before any model sees them). */
  private readonly counter = counterFor({ provider: 'openai', name: 'gpt-4o', params: {} });

  private readonly replicaAck: ReplicaAck | undefined;

  constructor(private readonly o: ToolRunnerOptions) {
    this.replicaAck = o.replicaAck && new ReplicaAck(o.redis, o.replicaAck, o.logger);
  }

  async start(): Promise<void> {
    await this.publishCatalog();
    const cancelChannel = this.o.store.keys.cancelChannel;
    this.o.subscriber.on('message', (channel: string, runId: string) => {
      if (channel !== cancelChannel) return;
      for (const ac of this.inFlight.get(runId) ?? []) ac.abort(new Error('run cancelled'));
    });
    await this.o.subscriber.subscribe(cancelChannel);
    for (const pool of this.o.pools) {
      const worker = new Worker(QUEUES.tools(pool), (job, token) => this.process(job, pool, token), {
        connection: this.o.redis.duplicate(),
        prefix: this.o.prefix,
        concurrency: this.o.concurrency,
        ...workerOptions(this.o.lockMs),
        maxStalledCount: TOOL_MAX_STALLS,
        autorun: true,
      });
      worker.on('error', (err) => this.o.logger.error({ err, pool }, 'tool worker error'));
      worker.on('stalled', () => this.o.metrics.jobsStalled.inc({ queue: QUEUES.tools(pool) }));
      worker.on('failed', (job, err) => {
        if (job && (job.attemptsMade >= (job.opts.attempts ?? 1) || err.name === 'UnrecoverableError'))
          this.onJobFailed(job, err).catch((e: unknown) => this.o.logger.error({ err: e, jobId: job.id }, 'could not answer the call of a failed tool job'));
      });
      this.workers.push(worker);
    }
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** Publishes the registry's tools to the deployment's catalog (at start, and when an MCP server's tools change). */
  async publishCatalog(): Promise<void> {
    await new ToolCatalog(this.o.redis, this.o.prefix).publish(this.o.registry.all().map((t) => t.entry));
  }

  /** Whether the worker of every pool takes jobs (readiness). */
  isRunning(): boolean {
    return this.workers.every((w) => workerTakingJobs(w));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    this.o.registry.close();
    await this.o.closeAfter?.();
  }

  /** Drain deadline passed: abort the tools still running; their jobs are retried elsewhere (same idempotency key). */
  handBack(): void {
    this.handingBack = true;
    for (const set of this.inFlight.values()) for (const ac of set) ac.abort(new HandedBackError());
  }

  private handingBack = false;

  /**
   * A tool job that failed for good (not a tool error: those are results) is answered tool_error at once. Nothing
   * else is published: the job's parent, which BullMQ runs only after this failure, answers it too if this could not.
   */
  private async onJobFailed(job: Job, err: Error): Promise<void> {
    const parsed = ToolJobSchema.safeParse(job.data);
    if (!parsed.success) return;
    const { runId, callId } = parsed.data;
    this.o.logger.error({ err, runId, callId }, 'tool job failed for good');
    try {
      await this.o.store.closeToolCall(runId, callId, 'job_failed');
      await this.continueBatch(parsed.data, null);
    } catch (e) {
      this.o.logger.error({ err: e, runId, callId }, 'could not answer a failed tool job');
    }
  }

  /**
   * Whether this delivery executes the call: one step checks the call and its run and records the start (the call's
   * `running` event) under this delivery as its owner. A call already running under another delivery was handed on:
   * that delivery crashed, or stalled past its lock. The job's lock says which one is stale: a delivery that no longer
   * holds it does nothing (its job was handed on); the one that does takes a `safe` call over and runs it again, and
   * answers a `never` call outcome_unknown — a stalled delivery that comes back then has its result refused as stale.
   */
  private async mayExecute(data: ToolJob, retry: 'safe' | 'never', owner: string, mayTakeOver: (from: string) => Promise<boolean>): Promise<boolean> {
    const { runId, callId } = data;
    const running = { callId, name: data.name, arguments: argumentsForDisplay(data.arguments), status: 'running' as const };
    const started = await this.o.store.markToolRunning(runId, callId, running, owner);
    switch (started) {
      case 'first':
      case 'taken':
        if (retry === 'never') await this.replicaAck?.afterStart(runId, callId);
        return true;
      case 'answered':
        return false; // stale job, or already answered: its result is reused
      case 'cancel':
        if (await this.o.store.closeToolCall(runId, callId, 'cancelled')) this.count(data.name, 'cancelled', 'cancelled');
        return false;
      case 'expired':
        if (await this.o.store.closeToolCall(runId, callId, 'skipped')) this.count(data.name, 'skipped', 'budget_exceeded');
        return false;
    }
    if (!(await mayTakeOver(started.owned))) {
      this.fenced('tool_start', runId, callId, started.owned);
      return false;
    }
    if (retry === 'safe') return (await this.o.store.markToolRunning(runId, callId, running, owner, started.owned)) === 'taken';
    if (await this.o.store.closeToolCall(runId, callId, 'outcome_unknown', { seen: started.owned, by: owner })) this.count(data.name, 'error');
    return false;
  }

  /** A write of a delivery that no longer owns its call, refused: logged and counted, never applied. */
  private fenced(step: 'tool_start' | 'tool_result', runId: string, callId: string, owner: string): void {
    this.o.metrics.fenced.inc({ step });
    this.o.logger.warn({ runId, callId, owner, step }, 'stale delivery: another delivery owns this tool call (this one lost its job lock while it stalled); nothing recorded');
  }

  private async runCancelled(runId: string): Promise<boolean> {
    const st = await this.o.store.load(runId);
    return !st || !!st.cancel || isTerminalStatus(st.status);
  }

  private count(tool: string, status: string, skipReason?: string): void {
    this.o.metrics.toolCalls.inc({ tool: this.o.registry.get(tool) ? tool : 'unknown', status });
    if (skipReason) this.o.metrics.toolsSkipped.inc({ reason: skipReason });
  }

  private async process(job: Job, pool: string, token?: string): Promise<{ callId: string }> {
    const parsed = ToolJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`malformed tool job: ${parsed.error.message}`); // retrying cannot fix it
    const owner = `${job.id ?? ''}@${token ?? ''}`;
    // the call's span and log lines join the run's trace (SPEC §8)
    const answered = await withTraceparent(parsed.data.trace, () => this.runCall(parsed.data, pool, owner, async () => !!token && (await job.extendLock(token, this.o.lockMs)) === 1));
    await this.continueBatch(parsed.data, answered);
    return { callId: parsed.data.callId };
  }

  /**
   * Once a delivery is done with its call, whatever it found: when its batch has no flow parent and is all answered,
   * iteration k+1 is published (RunScheduler.afterBatch) before the job completes (a crash in between hands the job on,
   * and its next delivery publishes again: same job id, the start a compare-and-set). `answered`: as the record step read it.
   */
  private async continueBatch(data: ToolJob, answered: boolean | null): Promise<void> {
    if (!data.batch || !this.o.scheduler) return; // (without a scheduler, the live-run reconciler publishes it)
    if (!(answered ?? (await this.o.store.calls.allAnswered(data.runId, data.batch)))) return;
    await this.o.scheduler.afterBatch(data.runId, data.tenantId, data.iteration, data.trace);
  }

  /**
   * A batch's local calls (SPEC §6), in the iteration that holds the run: executed here, in the orchestrator, with no
   * tool job, in parallel — owned by the iteration's delivery (`owner`) and recorded by the same compare-and-set as any
   * call. A call whose start was recorded (it has effects, or may not be retried) is recorded as soon as it finishes:
   * a crash while the rest of the batch runs must not run it again ("a call that finished is never executed again").
   * The reads safe to retry are recorded together once the last has finished (one step per few MB of results: the
   * cheapest path). `mayTakeOver(from)`: whether this delivery may take a call over that another delivery started
   * (that one lost its job: crashed, or stalled past its lock). `fresh`: the calls were made by this delivery's own
   * checkpoint, so none can have a result yet (no read of their status first). `defer`: the reads are not recorded
   * but returned, for the caller to record with the next iteration's start (one step for both); [] when recorded here.
   */
  async runLocal(calls: ToolJob[], owner: string, mayTakeOver: (from: string) => Promise<boolean>, fresh = false, defer = false): Promise<LocalResult[]> {
    const settled = await Promise.allSettled(calls.map(async (data) => {
      const r = await this.execute(data, LOCAL_POOL, owner, mayTakeOver, fresh);
      return r && !r.unstarted ? this.record(r) : r; // its start recorded: its result too, at once
    }));
    // a call handed back (drain) or whose start could not be recorded does not cost its batch the results that are in
    const done = settled.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
    const failed = settled.find((r) => r.status === 'rejected');
    if (defer && !failed && recordableWithStart(done)) return done; // the caller records them with the next start
    if (done.length) this.recordedLater(done, await this.o.store.recordToolResults(done[0]!.runId, done));
    if (failed) throw failed.reason;
    return [];
  }

  /** What recording results that runLocal handed back answered (in order), in the logs and metrics. */
  recordedLater(results: LocalResult[], answers: Array<RecordAnswer | undefined>): void {
    (results as Executed[]).forEach((r, i) => this.recorded(r, answers[i] ?? null));
  }

  /** One call, by `owner`: its start recorded (unless a read), the tool run, its result recorded once; its batch answered? */
  private async runCall(data: ToolJob, pool: string, owner: string, mayTakeOver: (from: string) => Promise<boolean>): Promise<boolean | null> {
    const r = await this.execute(data, pool, owner, mayTakeOver, false);
    if (!r) return null;
    const others = data.batch?.filter((id) => id !== data.callId) ?? [];
    const { answer, batchAnswered } = await this.o.store.recordBatchedToolResult(r.runId, r.callId, r.outcome, r.eventData, r.unstarted, r.owner, others);
    this.recorded(r, answer);
    return batchAnswered;
  }

  /** Records one executed call's result in its own step. */
  private async record(r: Executed): Promise<null> {
    this.recorded(r, await this.o.store.recordToolResult(r.runId, r.callId, r.outcome, r.eventData, r.unstarted, r.owner));
    return null;
  }

  /** What recording a result answered, in the logs and metrics. */
  private recorded(r: Executed, recorded: 'recorded' | 'cancelled' | 'skipped' | 'stale' | null): void {
    if (recorded === 'stale') this.fenced('tool_result', r.runId, r.callId, r.by);
    else if (recorded === 'recorded') this.count(r.name, r.outcome.status, r.outcome.status === 'cancelled' ? 'cancelled' : undefined);
    else if (recorded === 'cancelled') this.count(r.name, 'cancelled', 'cancelled');
    else if (recorded === 'skipped') this.count(r.name, 'skipped', 'budget_exceeded');
  }

  /** A call's start (unless a read) and execution: its result to record, or null when this delivery does not run it. */
  private async execute(data: ToolJob, pool: string, owner: string, mayTakeOver: (from: string) => Promise<boolean>, fresh: boolean): Promise<Executed | null> {
    const { runId, callId, name } = data;
    const tool = this.o.registry.get(name);
    const display = argumentsForDisplay(data.arguments);
    // a read tool safe to retry (or an unknown one, answered at once) needs no start step: its result step makes the
    // start's checks; a tool with effects records its start first, so that a crash mid-call is known after it. A
    // call that finished is never executed again (SPEC §6), read or not: one read of its status says so.
    const oneStep = !tool || (tool.entry.sideEffect === 'read' && tool.entry.retry === 'safe');
    if (oneStep ? !fresh && (await this.o.store.calls.answered(runId, callId)) : !(await this.mayExecute(data, tool.entry.retry, owner, mayTakeOver))) return null;
    const ac = new AbortController();
    let set = this.inFlight.get(runId);
    if (!set) this.inFlight.set(runId, (set = new Set()));
    set.add(ac);
    let outcome: ToolOutcome;
    const t0 = performance.now();
    const span = startToolSpan(data, pool);
    try {
      const logger = lazyChild(this.o.logger, { runId, callId, tool: name });
      const unavailable = tool ? undefined : this.o.registry.unavailable(name);
      outcome = unavailable ? toolErrorOutcome('tool_error', unavailable, { retryable: true }) : await inSpan(span, () => executeToolCall(tool, name, data.arguments, { runId, callId, tenantId: data.tenantId, idempotencyKey: `${runId}:${callId}`, logger }, ac.signal, {
        maxResultBytes: this.o.maxResultBytes ?? 5_000_000,
        maxResultTokens: data.maxResultTokens,
        countTokens: this.counter.count,
      }));
    } catch (e) {
      outcome = toolErrorOutcome('tool_error', e instanceof Error ? e.message : String(e));
    } finally {
      set.delete(ac);
      if (!set.size) this.inFlight.delete(runId);
    }
    endToolSpan(span, outcome);
    if (this.handingBack && ac.signal.aborted && !(await this.runCancelled(runId))) throw new HandedBackError();
    this.o.metrics.toolDuration.observe({ tool: tool ? name : 'unknown', pool }, (performance.now() - t0) / 1000);
    const eventData = { callId, name, arguments: display, status: outcome.status, ...(outcome.status === 'completed' ? { result: outcome.result } : { error: outcome.error }), durationMs: outcome.durationMs };
    return { runId, callId, name, outcome, eventData, unstarted: oneStep ? { callId, name, arguments: display, status: 'running' } : undefined, owner: oneStep ? '' : owner, by: owner };
  }
}

/** An executed call, its result still to record (RunStore.recordToolResults' entry, and who ran it). */
interface Executed extends LocalResult {
  runId: string;
  name: string;
  /** The delivery that ran it (the fenced-write log names it). */
  by: string;
}
