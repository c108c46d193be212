import type { CallMode, FinalizeReason } from '@agentloop/protocol';
import type { RunState } from '@agentloop/runtime';

/** What an `advance` job for iteration k must do, decided from the run's state alone (no I/O). */
export type AdvanceAction =
  | { kind: 'noop'; why: string }
  | { kind: 'cancel' }
  /** `repair`: this is the structured-output repair call (its user message is appended instead of an instruction). */
  | { kind: 'start'; expectPhase: 'queued' | 'tools'; callMode: CallMode; repair?: true }
  | { kind: 'fail_max_iterations' }
  | { kind: 'resume_call'; callMode: CallMode }
  | { kind: 'redispatch' };

/** The job id part of a recorded owner (`<job id>@<lock token>`; an owner recorded before tokens were is the id alone). */
export const ownerJobId = (owner: string): string => owner.split('@')[0]!;

/**
 * The iteration a job decides for: its own (`k`), or a later one its delivery went on to in place (iterations whose
 * calls all ran locally continue in the job that ran them: IterationWorker). A redelivery of that job — its process
 * died, or it stalled, mid-chain — finds the run past `k` with itself as the recorded owner, and takes the run up where
 * the chain stopped. Any other job id leaves `k` as it is (an owner id is unique to the job that started the call).
 */
export function chainedIteration(st: RunState, k: number, jobId?: string): number {
  return jobId !== undefined &&
    st.owner &&
    ownerJobId(st.owner) === jobId &&
    st.iteration > k &&
    ['model', 'tools', 'paused'].includes(st.phase)
    ? st.iteration
    : k;
}

/**
 * `jobId`: the deciding job. Iteration k has several jobs (the one its batch published, a resume, duplicates); only the
 * one that started its model call — or a BullMQ retry of it, which keeps its id — may resume that call. Another would
 * stream the model a second time, its deltas interleaved with the first's.
 */
export function decideAdvance(st: RunState, k: number, nowMs: number, jobId?: string): AdvanceAction {
  if (st.status === 'completed' || st.status === 'failed' || st.status === 'cancelled')
    return { kind: 'noop', why: 'run ended' };
  if (st.cancel) return { kind: 'cancel' };
  if (st.iteration === k && st.phase === 'model') {
    if (st.owner && jobId !== undefined && jobId !== ownerJobId(st.owner))
      return { kind: 'noop', why: `job ${ownerJobId(st.owner)} owns iteration ${k}'s model call` };
    return { kind: 'resume_call', callMode: st.callMode || 'tools' };
  }
  // the job of iteration k died after its checkpoint: publish its calls again (fixed job ids make it idempotent)
  if (st.iteration === k && (st.phase === 'paused' || (st.phase === 'tools' && !st.resuming)))
    return { kind: 'redispatch' };
  const startable = st.iteration === k - 1 && ((k === 1 && st.phase === 'queued') || (k > 1 && st.phase === 'tools'));
  if (!startable)
    return { kind: 'noop', why: `run is at iteration ${st.iteration} phase ${st.phase}, job is for ${k}` };
  const limits = st.request.limits;
  let reason: FinalizeReason | '' = st.pendingFinal;
  const overWall = limits.maxWallMs !== null && nowMs - st.createdAt > limits.maxWallMs;
  // the structured-output repair call is made whatever the iteration cap says (it is not counted against it), in
  // the call mode of the answer it repairs — without tools once the wall clock, tokens or cost are spent
  if (st.outputRepair?.iteration === k) {
    const spent =
      overWall ||
      (limits.maxTotalTokens !== null && st.usage.totalTokens >= limits.maxTotalTokens) ||
      (limits.maxCostUsd !== null && st.usage.costUsd >= limits.maxCostUsd);
    return {
      kind: 'start',
      expectPhase: 'tools',
      callMode: reason || (spent ? 'budget_exceeded' : 'tools'),
      repair: true,
    };
  }
  const repairCalls = st.outputRepair && st.outputRepair.iteration < k ? 1 : 0;
  if (!reason && overWall) reason = 'budget_exceeded';
  if (!reason && k - 1 - repairCalls >= limits.maxIterations) reason = 'max_iterations';
  if (reason === 'max_iterations' && limits.onMaxIterations === 'fail') return { kind: 'fail_max_iterations' };
  return { kind: 'start', expectPhase: k === 1 ? 'queued' : 'tools', callMode: reason || 'tools' };
}

const INSTRUCTIONS: Record<FinalizeReason, string> = {
  max_iterations: 'You have reached the maximum number of steps for this task.',
  loop_detected: 'You have repeated the same tool call several times without making progress.',
  budget_exceeded: 'The budget for this task is used up.',
  context_limit: 'The conversation is too long to continue using tools.',
};

/** The user-role instruction of a finalize call (tools withheld): answer from what you have. */
export function finalizeInstruction(reason: FinalizeReason): string {
  return `${INSTRUCTIONS[reason]} Do not call any tools. Using only the information gathered so far, give your best final answer to the original request now.`;
}
