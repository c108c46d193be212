import { UnrecoverableError, type Job } from 'bullmq';
import { counterFor } from '@agentloop/llm';
import type { Redis } from 'ioredis';
import {
  LOCAL_POOL,
  QUEUES,
  ToolJobSchema,
  argumentsForDisplay,
  isTerminalStatus,
  toolCallData,
  toolErrorOutcome,
  type ToolJob,
  type ToolOutcome,
} from '@agentloop/protocol';
import {
  HandedBackError,
  ToolCatalog,
  endToolSpan,
  inSpan,
  startToolSpan,
  withTraceparent,
  workerOptions,
  WorkerLanes,
  type LocalResult,
  type Logger,
  type Metrics,
  type RecordAnswer,
  type RunScheduler,
  type RunStore,
  recordableWithStart,
} from '@agentloop/runtime';
import { executeToolCall } from './execute-tool-call.js';
import { isSafeRead, type ToolRegistry } from './registry.js';
import { ReplicaAck } from './replica-ack.js';
import { CallRecorder, type Executed } from './call-recorder.js';
import { lazyChild } from './lazy-logger.js';

export interface ToolRunnerOptions {
  redis: Redis;
  /** A separate connection for pub/sub (cancellations). */
  subscriber: Redis;
  store: RunStore;
  registry: ToolRegistry;
  metrics: Metrics;
  logger: Logger;
  /** The partition's prefix: its tool queues and runs. */
  prefix: string;
  /** Where the deployment's tool catalog is: its own prefix, one catalog for every partition [prefix]. */
  catalogPrefix?: string;
  pools: string[];
  concurrency: number;
  lockMs: number;
  maxResultBytes?: number;
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
  private readonly workers: WorkerLanes[] = [];
  private readonly inFlight = new Map<string, Set<AbortController>>();
  /** o200k BPE: exact for current OpenAI models, a close proxy for others (results are capped before any model sees them). */
  private readonly counter = counterFor({ provider: 'openai', name: 'gpt-4o', params: {} });

  private readonly calls: CallRecorder;

  constructor(private readonly o: ToolRunnerOptions) {
    this.calls = new CallRecorder(o, o.replicaAck && new ReplicaAck(o.redis, o.replicaAck, o.logger));
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
      const worker = new WorkerLanes(
        QUEUES.tools(pool),
        (job, token) => this.process(job, pool, token),
        this.o.concurrency,
        { prefix: this.o.prefix, ...workerOptions(this.o.lockMs), maxStalledCount: TOOL_MAX_STALLS, autorun: true },
        () => this.o.redis.duplicate(),
      );
      worker.on('error', (err) => this.o.logger.error({ err, pool }, 'tool worker error'));
      worker.on('stalled', () => this.o.metrics.jobsStalled.inc({ queue: QUEUES.tools(pool) }));
      worker.on('failed', (job, err) => {
        if (job && (job.attemptsMade >= (job.opts.attempts ?? 1) || err.name === 'UnrecoverableError'))
          this.calls
            .answerFailedJob(job.data, err)
            .catch((e: unknown) =>
              this.o.logger.error({ err: e, jobId: job.id }, 'could not answer the call of a failed tool job'),
            );
      });
      this.workers.push(worker);
    }
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** Publishes the registry's tools to the deployment's catalog (at start, and when an MCP server's tools change). */
  async publishCatalog(): Promise<void> {
    await new ToolCatalog(this.o.redis, this.o.catalogPrefix ?? this.o.prefix).publish(
      this.o.registry.all().map((t) => t.entry),
    );
  }

  /** Whether the worker of every pool takes jobs (readiness). */
  isRunning(): boolean {
    return this.workers.every((w) => w.isRunning());
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    this.o.registry.close();
  }

  /** Drain deadline passed: abort the tools still running; their jobs are retried elsewhere (same idempotency key). */
  handBack(): void {
    this.handingBack = true;
    for (const set of this.inFlight.values()) for (const ac of set) ac.abort(new HandedBackError());
  }

  private handingBack = false;

  private async runCancelled(runId: string): Promise<boolean> {
    const st = await this.o.store.load(runId);
    return !st || !!st.cancel || isTerminalStatus(st.status);
  }

  private async process(job: Job, pool: string, token?: string): Promise<{ callId: string }> {
    const parsed = ToolJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`malformed tool job: ${parsed.error.message}`); // retrying cannot fix it
    const owner = `${job.id ?? ''}@${token ?? ''}`;
    // the call's span and log lines join the run's trace (SPEC §8)
    const answered = await withTraceparent(parsed.data.trace, () =>
      this.runCall(parsed.data, pool, owner, async () => !!token && (await job.extendLock(token, this.o.lockMs)) === 1),
    );
    await this.calls.continueBatch(parsed.data, answered);
    return { callId: parsed.data.callId };
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
  async runLocal(
    calls: ToolJob[],
    owner: string,
    mayTakeOver: (from: string) => Promise<boolean>,
    fresh = false,
    defer = false,
  ): Promise<LocalResult[]> {
    const settled = await Promise.allSettled(
      calls.map(async (data) => {
        const r = await this.execute(data, LOCAL_POOL, owner, mayTakeOver, fresh);
        return r && !r.unstarted ? this.calls.record(r) : r; // its start recorded: its result too, at once
      }),
    );
    // a call handed back (drain) or whose start could not be recorded does not cost its batch the results that are in
    const done = settled.flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
    const failed = settled.find((r) => r.status === 'rejected');
    if (defer && !failed && recordableWithStart(done)) return done; // the caller records them with the next start
    if (done.length) this.recordedLater(done, await this.o.store.calls.recordToolResults(done[0]!.runId, done));
    if (failed) throw failed.reason;
    return [];
  }

  /** Whether each tool is registered here as a read safe to retry: a batch of them may run before its checkpoint. */
  readsOnly(names: string[]): boolean {
    return names.every((n) => isSafeRead(this.o.registry.get(n)));
  }

  /** A batch of such reads, run in parallel and returned unrecorded: the caller records them with the next start. */
  async runReads(calls: ToolJob[], owner: string): Promise<LocalResult[]> {
    const done = await Promise.all(calls.map((data) => this.execute(data, LOCAL_POOL, owner, async () => false, true)));
    return done.filter((r): r is Executed => r !== null);
  }

  /** What recording results that runLocal handed back answered (in order), in the logs and metrics. */
  recordedLater(results: LocalResult[], answers: Array<RecordAnswer | undefined>): void {
    (results as Executed[]).forEach((r, i) => this.calls.recorded(r, answers[i] ?? null));
  }

  /** One call, by `owner`: its start recorded (unless a read), the tool run, its result recorded once; its batch answered? */
  private async runCall(
    data: ToolJob,
    pool: string,
    owner: string,
    mayTakeOver: (from: string) => Promise<boolean>,
  ): Promise<boolean | null> {
    const r = await this.execute(data, pool, owner, mayTakeOver, false);
    return r ? this.calls.recordInBatch(r, data) : null;
  }

  /** A call's start (unless a read) and execution: its result to record, or null when this delivery does not run it. */
  private async execute(
    data: ToolJob,
    pool: string,
    owner: string,
    mayTakeOver: (from: string) => Promise<boolean>,
    fresh: boolean,
  ): Promise<Executed | null> {
    const { runId, callId, name } = data;
    const tool = this.o.registry.get(name);
    const display = argumentsForDisplay(data.arguments);
    // a read tool safe to retry (or an unknown one, answered at once) needs no start step: its result step makes the
    // start's checks; a tool with effects records its start first, so that a crash mid-call is known after it. A
    // call that finished is never executed again (SPEC §6), read or not: one read of its status says so.
    const oneStep = !tool || isSafeRead(tool);
    if (
      oneStep
        ? !fresh && (await this.o.store.calls.answered(runId, callId))
        : !(await this.calls.mayExecute(data, tool.entry.retry, owner, mayTakeOver))
    )
      return null;
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
      outcome = unavailable
        ? toolErrorOutcome('tool_error', unavailable, { retryable: true })
        : await inSpan(span, () =>
            executeToolCall(
              tool,
              name,
              data.arguments,
              { runId, callId, tenantId: data.tenantId, idempotencyKey: `${runId}:${callId}`, logger },
              ac.signal,
              {
                maxResultBytes: this.o.maxResultBytes ?? 5_000_000,
                maxResultTokens: data.maxResultTokens,
                countTokens: this.counter.count,
              },
            ),
          );
    } catch (e) {
      outcome = toolErrorOutcome('tool_error', e instanceof Error ? e.message : String(e));
    } finally {
      set.delete(ac);
      if (!set.size) this.inFlight.delete(runId);
    }
    endToolSpan(span, outcome);
    if (this.handingBack && ac.signal.aborted && !(await this.runCancelled(runId))) throw new HandedBackError();
    this.o.metrics.toolDuration.observe({ tool: tool ? name : 'unknown', pool }, (performance.now() - t0) / 1000);
    const shown = { callId, name, arguments: display };
    const eventData = toolCallData(shown, outcome.status, outcome);
    return {
      runId,
      callId,
      name,
      outcome,
      eventData,
      unstarted: oneStep ? toolCallData(shown, 'running') : undefined,
      owner: oneStep ? '' : owner,
      by: owner,
    };
  }
}
