import { ToolJobSchema, argumentsForDisplay, toolCallData, type ToolJob } from '@agentloop/protocol';
import type { LocalResult, Logger, Metrics, RunScheduler, RunStore } from '@agentloop/runtime';
import type { ToolRegistry } from './registry.js';
import type { ReplicaAck } from './replica-ack.js';

/** An executed call, its result still to record (RunCalls.recordToolResults' entry, and who ran it). */
export interface Executed extends LocalResult {
  runId: string;
  name: string;
  /** The delivery that ran it (the fenced-write log names it). */
  by: string;
}

/**
 * A tool call's start and result as the run store records them, under the delivery that owns the call, and what each
 * answer counts in the metrics and says in the logs (a stale delivery's refused write among them).
 */
export class CallRecorder {
  constructor(
    private readonly o: {
      store: RunStore;
      metrics: Metrics;
      logger: Logger;
      registry: ToolRegistry;
      scheduler?: Pick<RunScheduler, 'afterBatch'>;
    },
    private readonly replicaAck: ReplicaAck | undefined,
  ) {}

  /**
   * Whether this delivery executes the call: one step checks the call and its run and records the start (the call's
   * `running` event) under this delivery as its owner. A call already running under another delivery was handed on:
   * that delivery crashed, or stalled past its lock. The job's lock says which one is stale: a delivery that no longer
   * holds it does nothing (its job was handed on); the one that does takes a `safe` call over and runs it again, and
   * answers a `never` call outcome_unknown — a stalled delivery that comes back then has its result refused as stale.
   */
  async mayExecute(
    data: ToolJob,
    retry: 'safe' | 'never',
    owner: string,
    mayTakeOver: (from: string) => Promise<boolean>,
  ): Promise<boolean> {
    const { runId, callId } = data;
    const running = toolCallData(
      { callId, name: data.name, arguments: argumentsForDisplay(data.arguments) },
      'running',
    );
    const started = await this.o.store.calls.markToolRunning(runId, callId, running, owner);
    switch (started) {
      case 'first':
      case 'taken':
        if (retry === 'never') await this.replicaAck?.afterStart(runId, callId);
        return true;
      case 'answered':
        return false; // stale job, or already answered: its result is reused
      case 'cancel':
        if (await this.o.store.calls.closeToolCall(runId, callId, 'cancelled'))
          this.count(data.name, 'cancelled', 'cancelled');
        return false;
      case 'expired':
        if (await this.o.store.calls.closeToolCall(runId, callId, 'skipped'))
          this.count(data.name, 'skipped', 'budget_exceeded');
        return false;
    }
    if (!(await mayTakeOver(started.owned))) {
      this.fenced('tool_start', runId, callId, started.owned);
      return false;
    }
    if (retry === 'safe')
      return (await this.o.store.calls.markToolRunning(runId, callId, running, owner, started.owned)) === 'taken';
    if (await this.o.store.calls.closeToolCall(runId, callId, 'outcome_unknown', { seen: started.owned, by: owner }))
      this.count(data.name, 'error');
    return false;
  }

  /** A write of a delivery that no longer owns its call, refused: logged and counted, never applied. */
  private fenced(step: 'tool_start' | 'tool_result', runId: string, callId: string, owner: string): void {
    this.o.metrics.fenced.inc({ step });
    this.o.logger.warn(
      { runId, callId, owner, step },
      'stale delivery: another delivery owns this tool call (this one lost its job lock while it stalled); nothing recorded',
    );
  }

  private count(tool: string, status: string, skipReason?: string): void {
    this.o.metrics.toolCalls.inc({ tool: this.o.registry.get(tool) ? tool : 'unknown', status });
    if (skipReason) this.o.metrics.toolsSkipped.inc({ reason: skipReason });
  }

  /** Records one executed call's result in its own step. */
  async record(r: Executed): Promise<null> {
    this.recorded(
      r,
      await this.o.store.calls.recordToolResult(r.runId, r.callId, r.outcome, r.eventData, r.unstarted, r.owner),
    );
    return null;
  }

  /** Records a tool job's result in its own step: whether its batch (ToolJob.batch) is all answered, as the step read it. */
  async recordInBatch(r: Executed, data: ToolJob): Promise<boolean | null> {
    const others = data.batch?.filter((id) => id !== data.callId) ?? [];
    const { answer, batchAnswered } = await this.o.store.calls.recordBatchedToolResult(
      r.runId,
      r.callId,
      r.outcome,
      r.eventData,
      r.unstarted,
      r.owner,
      others,
    );
    this.recorded(r, answer);
    return batchAnswered;
  }

  /**
   * Once a delivery is done with its call, whatever it found: when its batch has no flow parent and is all answered,
   * iteration k+1 is published (RunScheduler.afterBatch) before the job completes (a crash in between hands the job on,
   * and its next delivery publishes again: same job id, the start a compare-and-set). `answered`: as the record step read it.
   */
  async continueBatch(data: ToolJob, answered: boolean | null): Promise<void> {
    if (!data.batch || !this.o.scheduler) return; // (without a scheduler, the live-run reconciler publishes it)
    if (!(answered ?? (await this.o.store.calls.allAnswered(data.runId, data.batch)))) return;
    await this.o.scheduler.afterBatch(data.runId, data.tenantId, data.iteration, data.trace);
  }

  /**
   * A tool job that failed for good (not a tool error: those are results) is answered tool_error at once, and when it
   * was its batch's last the next iteration is published; a job in a flow has its parent, which answers it too.
   */
  async answerFailedJob(jobData: unknown, err: Error): Promise<void> {
    const parsed = ToolJobSchema.safeParse(jobData);
    if (!parsed.success) return;
    const { runId, callId } = parsed.data;
    this.o.logger.error({ err, runId, callId }, 'tool job failed for good');
    try {
      await this.o.store.calls.closeToolCall(runId, callId, 'job_failed');
      await this.continueBatch(parsed.data, null);
    } catch (e) {
      this.o.logger.error({ err: e, runId, callId }, 'could not answer a failed tool job');
    }
  }

  /** What recording a result answered, in the logs and metrics. */
  recorded(r: Executed, recorded: 'recorded' | 'cancelled' | 'skipped' | 'stale' | null): void {
    if (recorded === 'stale') this.fenced('tool_result', r.runId, r.callId, r.by);
    else if (recorded === 'recorded')
      this.count(r.name, r.outcome.status, r.outcome.status === 'cancelled' ? 'cancelled' : undefined);
    else if (recorded === 'cancelled') this.count(r.name, 'cancelled', 'cancelled');
    else if (recorded === 'skipped') this.count(r.name, 'skipped', 'budget_exceeded');
  }
}
