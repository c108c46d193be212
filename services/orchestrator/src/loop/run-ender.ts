import { iterationCompletedData, type Message } from '@agentloop/protocol';
import type { Metrics, RunState, RunStore } from '@agentloop/runtime';
import { ownerJobId } from './decide-advance.js';

/** Ends runs that do not end through a model answer: cancelled, failed, or unanswerable for their context. */
export class RunEnder {
  constructor(
    private readonly store: RunStore,
    private readonly metrics: Metrics,
    private readonly forget: (runId: string) => void,
    private readonly knownTools: () => Promise<ReadonlyMap<string, unknown>> = async () => new Map(),
  ) {}

  async cancelled(st: RunState): Promise<void> {
    await this.finish(st.id, {
      expectIteration: null,
      status: 'cancelled',
      stopReason: 'cancelled',
      error: null,
      events: [{ type: 'run.cancelled', data: { reason: st.cancel || 'cancelled' } }],
    });
  }

  /** `owner`: the delivery whose model call failed; when another has taken the call over since, nothing ends. */
  async failed(
    runId: string,
    code: string,
    message: string,
    iteration: number | null = null,
    owner = '',
  ): Promise<void> {
    const error = { code, message };
    await this.finish(runId, {
      expectIteration: iteration,
      status: 'failed',
      stopReason: null,
      error,
      events: [{ type: 'run.failed', data: { error } }],
      owner,
    });
  }

  /**
   * An iteration job failed for good: its run ends — unless another job owns the iteration's model call (this one was
   * a stale duplicate), which ends or advances the run itself.
   */
  async failedJob(jobId: string | undefined, runId: string, err: Error): Promise<void> {
    const st = await this.store.load(runId);
    if (!st || (st.phase === 'model' && st.owner && ownerJobId(st.owner) !== jobId)) return;
    await this.failed(runId, 'internal', `iteration job failed: ${err.message}`, st.iteration);
  }

  async failedAtMaxIterations(st: RunState): Promise<void> {
    const error = {
      code: 'max_iterations',
      message: `the run reached maxIterations (${st.request.limits.maxIterations})`,
    };
    await this.finish(st.id, {
      expectIteration: st.iteration,
      status: 'failed',
      stopReason: 'max_iterations',
      error,
      events: [{ type: 'run.failed', data: { error } }],
    });
  }

  /** Ends the run and counts it, and the open calls the end answered `cancelled`. */
  private async finish(runId: string, p: Parameters<RunStore['finish']>[1]): Promise<void> {
    const ended = await this.store.finish(runId, p);
    if (!ended) return;
    if (ended.closed.length) this.metrics.countCalls(ended.closed, 'cancelled', await this.knownTools(), 'cancelled');
    this.ended(runId, p.status, p.stopReason ?? 'none');
  }

  /**
   * The model cannot be called at all (context): complete the run with an explanation, never fail it (a run with
   * `output.schema` then has no structured answer: `outputJson` is null).
   */
  async withoutAnswer(st: RunState, k: number, output: string): Promise<void> {
    const message: Message = { role: 'assistant', content: output };
    const ok = await this.store.checkpoint(
      st.id,
      {
        iteration: k,
        message,
        totals: { ...st.usage },
        iterationUsage: {},
        final: { stopReason: 'context_limit', output },
        calls: [],
        pendingFinal: '',
        repeat: { fingerprint: st.repeatFingerprint, count: st.repeatCount },
        events: [
          { type: 'message.delta', data: { iteration: k, text: output } },
          { type: 'iteration.completed', data: iterationCompletedData(k) },
          {
            type: 'run.completed',
            data: {
              output,
              ...(st.request.output ? { outputJson: null } : {}),
              stopReason: 'context_limit',
              iterations: k,
              usage: st.usage,
            },
          },
        ],
      },
      st.owner,
    );
    if (ok === true) this.ended(st.id, 'completed', 'context_limit');
  }

  ended(runId: string, status: string, stopReason: string): void {
    this.metrics.runsFinished.inc({ status, stop_reason: stopReason });
    this.forget(runId);
  }
}
