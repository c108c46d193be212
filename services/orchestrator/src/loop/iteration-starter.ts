import type { AdvanceJob, CallMode } from '@agentloop/protocol';
import type { IterationDelivery, LocalResult, RunState, RunStore, StartParams, Started } from '@agentloop/runtime';
import type { LocalCalls } from './dispatch-calls.js';
import type { AdvanceAction } from './planner.js';
import { stateAfterStart } from './predicted-state.js';
import { answerFailedChildren, startParams } from './start-iteration.js';

/** The longest transcript a first iteration's start returns (a longer one is read on its own, in slices). */
export const FIRST_TRANSCRIPT_WITH_START = 200;

/** A start that applied: the state it left, and what it appended. 'stale': not where the guess said; 'done': nothing to do. */
export type StartAnswer = { state: RunState; callMode: CallMode; started: Started } | 'stale' | 'done';

/**
 * The ways an iteration job starts its iteration: as decided from a state it read or guessed, or as the publisher of a
 * first iteration or a resume planned it. A start records the batch's local reads first when the job ran them.
 */
export class IterationStarter {
  constructor(
    private readonly store: RunStore,
    private readonly local?: LocalCalls,
  ) {}

  /** Records results runLocal handed back, in a step of their own (the iteration that would have taken them did not start). */
  async recordResults(runId: string, results: LocalResult[]): Promise<void> {
    this.local?.recordedLater(results, await this.store.calls.recordToolResults(runId, results));
  }

  /** Starts iteration k as `action` decided from `st`, recording `results` (the batch's reads this job ran) first. */
  async start(
    delivery: IterationDelivery,
    st: RunState,
    k: number,
    action: Extract<AdvanceAction, { kind: 'start' }>,
    results?: LocalResult[],
  ): Promise<StartAnswer> {
    const runId = st.id;
    const repair = action.repair ? st.outputRepair?.message : undefined; // the structured-output repair turn
    const params = startParams(
      delivery,
      k,
      action.expectPhase,
      action.callMode,
      st.pendingFinal,
      st.iterUsage,
      false,
      repair,
      st.batch,
    );
    let started = results
      ? await this.startRecording(runId, params, results)
      : await this.store.startIteration(runId, params);
    // a call of a resumed batch is unanswered: when its job is a child of this one that failed for good, answer it
    // and start; otherwise it still runs, and its own flow's parent starts the iteration when it is done
    if (started === 'waiting' && (await answerFailedChildren(this.store, delivery, runId)))
      started = await this.store.startIteration(runId, params);
    if (started === 'stale') return 'stale';
    if (started === 'waiting') return 'done';
    return {
      state: stateAfterStart(st, k, action.callMode, delivery.owner, started.toolCalls),
      callMode: action.callMode,
      started,
    };
  }

  /** A first or resumed iteration started as its publisher planned, in one step: 'stale' when the plan no longer holds. */
  async startPlanned(
    delivery: IterationDelivery,
    runId: string,
    k: number,
    plan: NonNullable<AdvanceJob['plan']>,
  ): Promise<StartAnswer> {
    const params = {
      ...startParams(delivery, k, k === 1 ? 'queued' : 'tools', plan.callMode, plan.pendingFinal, plan.iterUsage, true),
      // a new run's transcript comes back with its start: the model call needs it next, and nothing holds it yet
      ...(k === 1 ? { transcriptUpTo: FIRST_TRANSCRIPT_WITH_START } : {}),
    };
    let started = await this.store.startIteration(runId, params);
    if (started === 'waiting' && (await answerFailedChildren(this.store, delivery, runId)))
      started = await this.store.startIteration(runId, params);
    if (started === 'waiting') return 'done';
    if (started === 'stale' || !started.state) return 'stale';
    return { state: started.state, callMode: plan.callMode, started };
  }

  /** The start that records the batch's reads first, in the same step (their answers in the logs and metrics). */
  private async startRecording(
    runId: string,
    params: StartParams,
    results: LocalResult[],
  ): Promise<Started | 'stale' | 'waiting'> {
    const { started, recorded } = await this.store.startIterationRecording(runId, { ...params, results });
    this.local?.recordedLater(results, recorded);
    return started;
  }
}
