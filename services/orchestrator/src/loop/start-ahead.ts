import { LOCAL_POOL, type CallMode, type CallToRun } from '@agentloop/protocol';
import {
  recordableWithStart,
  type CheckpointInput,
  type IterationDelivery,
  type LocalResult,
  type RunState,
  type RunStore,
  type StartParams,
  type Started,
} from '@agentloop/runtime';
import { toolJobs, type DispatchDeps } from './dispatch-calls.js';
import type { AdvanceAction } from './planner.js';
import { startParams } from './start-iteration.js';

/** Iteration k+1's start, planned behind iteration k's checkpoint, with the batch's reads already run. */
export interface Ahead {
  k: number;
  callMode: CallMode;
  params: StartParams;
  results: LocalResult[];
}

/** What the round trip of a checkpoint and the start behind it answered. */
export type AheadOutcome =
  | { kind: 'started'; started: Started }
  /** Checkpointed, the start refused: the results it did not record go on with the next start. */
  | { kind: 'checkpointed'; unrecorded: LocalResult[] }
  | { kind: 'taken'; taken: string[] }
  | { kind: 'fenced' };

/**
 * Iteration k+1 started right behind iteration k's checkpoint, in the same round trip (SPEC §6, local tools: the
 * cheapest path; docs/ARCHITECTURE.md, "One iteration"). It applies when every call to run is a local read safe to
 * retry, nothing pauses, the next step is a start and the job goes on in place: the reads run before the checkpoint
 * (they have no effect, so a refused checkpoint leaves nothing behind), and the start, carrying their results, is a
 * compare-and-set over that very checkpoint (its owner, its iteration), so it never applies without it, nor twice.
 */
export class StartAhead {
  constructor(
    private readonly d: DispatchDeps,
    private readonly store: RunStore,
    private readonly decide: (st: RunState, k: number, nowMs: number, jobId?: string) => AdvanceAction,
  ) {}

  /**
   * The plan of k+1's start, the reads run; null when iteration k does not qualify (nothing run, nothing committed).
   * `after`: the state iteration k's checkpoint leaves. A plan commits the job to going on in place.
   */
  async prepare(delivery: IterationDelivery, after: RunState, k: number, toRun: CallToRun[]): Promise<Ahead | null> {
    const local = this.d.local;
    if (!local?.readsOnly || !toRun.every((c) => c.pool === LOCAL_POOL) || !local.readsOnly(toRun.map((c) => c.name)))
      return null;
    const action = this.decide(after, k + 1, Date.now(), delivery.jobId);
    if (action.kind !== 'start' || !this.d.mayContinue?.(delivery, k)) return null;
    const repair = action.repair ? after.outputRepair?.message : undefined;
    const params = startParams(
      delivery,
      k + 1,
      action.expectPhase,
      action.callMode,
      after.pendingFinal,
      after.iterUsage,
      false,
      repair,
      after.batch,
    );
    const results = toRun.length ? await local.runReads!(toolJobs(after, k, toRun), delivery.owner) : [];
    return { k: k + 1, callMode: action.callMode, params: { ...params, results }, results };
  }

  /** Sends iteration k's checkpoint and the planned start behind it; what the results' answers were, logged and counted. */
  async send(runId: string, checkpoint: CheckpointInput, owner: string, ahead: Ahead): Promise<AheadOutcome> {
    if (ahead.results.length && !recordableWithStart(ahead.results))
      return this.sendApart(runId, checkpoint, owner, ahead);
    const { checkpointed, start } = await this.store.checkpointThenStart(runId, checkpoint, owner, ahead.params);
    if (typeof checkpointed === 'object') return { kind: 'taken', taken: checkpointed.taken };
    if (!checkpointed) return { kind: 'fenced' };
    const recorded = start.recorded.map((a, i) => [ahead.results[i]!, a] as const).filter(([, a]) => a !== null);
    if (recorded.length)
      this.d.local!.recordedLater(
        recorded.map(([r]) => r),
        recorded.map(([, a]) => a),
      );
    if (typeof start.started === 'object') return { kind: 'started', started: start.started };
    return { kind: 'checkpointed', unrecorded: ahead.results.filter((_, i) => start.recorded[i] === null) };
  }

  /** Results too large for one step (a model-controlled batch of big reads): the checkpoint, then the results in steps of their own. */
  private async sendApart(
    runId: string,
    checkpoint: CheckpointInput,
    owner: string,
    ahead: Ahead,
  ): Promise<AheadOutcome> {
    const checkpointed = await this.store.checkpoint(runId, checkpoint, owner);
    if (typeof checkpointed === 'object') return { kind: 'taken', taken: checkpointed.taken };
    if (!checkpointed) return { kind: 'fenced' };
    this.d.local!.recordedLater(ahead.results, await this.store.calls.recordToolResults(runId, ahead.results));
    return { kind: 'checkpointed', unrecorded: [] };
  }
}
