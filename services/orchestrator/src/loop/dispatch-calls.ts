import { LOCAL_POOL, type CallToRun, type ToolJob } from '@agentloop/protocol';
import {
  maxResultTokens,
  type IterationDelivery,
  type LocalResult,
  type RecordAnswer,
  type RunScheduler,
  type RunState,
  type RunStore,
} from '@agentloop/runtime';

/** Runs local calls in this process (SPEC §6): the tool-runner's own execution path, without a tool job. */
export interface LocalCalls {
  /**
   * A batch's local calls, their results recorded in one step. `owner`: the iteration's delivery; `mayTakeOver(from)`:
   * whether it may take over a call `from` started; `fresh`: the calls were made by this delivery's checkpoint.
   */
  runLocal(
    calls: ToolJob[],
    owner: string,
    mayTakeOver: (from: string) => Promise<boolean>,
    fresh?: boolean,
    defer?: boolean,
  ): Promise<LocalResult[]>;
  /** What recording results runLocal handed back answered (logs, metrics). */
  recordedLater(results: LocalResult[], answers: Array<RecordAnswer | undefined>): void;
  /** Whether every one of these tools is local, a read and safe to retry: it may run before its checkpoint. */
  readsOnly?(names: string[]): boolean;
  /** Runs such reads, owned by `owner`, and returns their results unrecorded (StartAhead records them). */
  runReads?(calls: ToolJob[], owner: string): Promise<LocalResult[]>;
}

/** The tool jobs of iteration k's calls, as a tool-runner takes them. */
export function toolJobs(st: RunState, k: number, calls: CallToRun[]): ToolJob[] {
  const cap = maxResultTokens(st.request);
  return calls.map((c) => ({
    runId: st.id,
    tenantId: st.tenant,
    callId: c.callId,
    name: c.name,
    arguments: c.arguments,
    iteration: k,
    maxResultTokens: cap,
  }));
}

export interface DispatchDeps {
  scheduler: RunScheduler;
  /** This process's local tools; without them local calls go to the `tools-local` queue like any pool's. */
  local?: LocalCalls;
  /**
   * Whether the next iteration may go on in this delivery's job instead of a job of its own (Continuations says when);
   * a yes is a commitment. The batch's reads then ride with that iteration's start (`deferResults`).
   */
  mayContinue?: (delivery: IterationDelivery, k: number) => boolean;
  deferResults?: (delivery: IterationDelivery, results: LocalResult[]) => void;
}

/**
 * What follows a checkpoint (or its re-dispatch after a crash): the calls that need no decision. Local calls run here,
 * in place and in parallel, owned by this iteration's delivery — recorded like any call, so a crash mid-call runs a
 * `safe` one again and answers a `never` one outcome_unknown (the redelivery finds it running under the dead owner).
 * The others go to their pools once the local ones are recorded (at most 5 s), and the delivery that answers the last
 * of them publishes the next iteration's job (RunScheduler.afterCheckpoint; a parked run's: its children): published
 * earlier, that job could start while a local call still runs, and answer it as failed. A local
 * call with effects is recorded as soon as it finishes; the reads are recorded in one step once the last has finished
 * (the cheapest path: one script per batch, not one per call), and a batch of local calls only needs no child: the
 * next iteration's job follows alone. `fresh`: the calls were made by this delivery's own checkpoint (none can be
 * answered yet), not re-dispatched.
 *
 * Returns true when no job was published because iteration k+1 goes on in this job: every call of the batch ran here
 * (or none was left to run), the run is not parked, and the worker has room (DispatchDeps.mayContinue).
 */
export async function dispatchCalls(
  d: DispatchDeps,
  delivery: IterationDelivery,
  st: RunState,
  k: number,
  calls: CallToRun[],
  pausedUntil: number | null,
  fresh = false,
): Promise<boolean> {
  const local = d.local ? calls.filter((c) => c.pool === LOCAL_POOL) : [];
  const pooled = local.length ? calls.filter((c) => c.pool !== LOCAL_POOL) : calls;
  const goesOn = !pooled.length && pausedUntil === null && !!d.mayContinue?.(delivery, k);
  if (local.length) {
    // a local call another delivery started is taken over only when this delivery still holds its own job and that
    // one no longer holds its (it crashed, or stalled past its lock): a rival job of the iteration (a duplicate
    // publish, a reconciler's) never runs a call beside a live delivery that is running it
    const deferred = await d.local!.runLocal(
      toolJobs(st, k, local),
      delivery.owner,
      (from) => delivery.mayTakeOver(from),
      fresh,
      goesOn,
    );
    if (deferred.length) d.deferResults!(delivery, deferred);
  }
  if (goesOn) return true;
  await d.scheduler.afterCheckpoint(st, k, pooled, pausedUntil);
  return false;
}

/**
 * Iteration k's batch again, after the delivery that checkpointed it died before its jobs were published (or while its
 * local calls ran): the calls recorded, unanswered, and not waiting for a decision.
 */
export async function redispatchCalls(
  d: DispatchDeps,
  store: RunStore,
  delivery: IterationDelivery,
  st: RunState,
  k: number,
): Promise<boolean> {
  const recorded = await store.calls.metaAndOutcomes(st.id, st.batch);
  const waiting = new Set(st.pending.map((p) => p.callId));
  const toRun = recorded.flatMap(({ meta: m, outcome }, i) =>
    m && !outcome && !waiting.has(st.batch[i]!)
      ? [{ callId: st.batch[i]!, name: m.name, arguments: m.arguments, pool: m.pool }]
      : [],
  );
  return dispatchCalls(d, delivery, st, k, toRun, st.phase === 'paused' ? st.pausedUntil : null);
}
