import {
  callIdOfToolJob,
  iterationCompletedData,
  type CallMode,
  type FinalizeReason,
  type Message,
  type NewEvent,
} from '@agentloop/protocol';
import type { IterationDelivery, RunState, RunStore } from '@agentloop/runtime';
import { finalizeInstruction } from './decide-advance.js';

/**
 * What starting iteration k records: its events, the finalize instruction of a call without tools — or, for the
 * structured-output repair call, its `repair` message instead —, its owner.
 */
export function startParams(
  delivery: IterationDelivery,
  k: number,
  expectPhase: 'queued' | 'tools',
  callMode: CallMode,
  pendingFinal: FinalizeReason | '',
  iterUsage: RunState['iterUsage'],
  returnState: boolean,
  repair?: string,
  expectBatch?: readonly string[],
) {
  const events: NewEvent[] = [];
  if (k === 1) events.push({ type: 'run.started', data: {} });
  else events.push({ type: 'iteration.completed', data: iterationCompletedData(k - 1, iterUsage) });
  events.push({ type: 'iteration.started', data: { iteration: k } });
  const instruction = repair ?? (callMode !== 'tools' ? finalizeInstruction(callMode) : undefined);
  const extraMessage: Message | undefined =
    instruction !== undefined ? { role: 'user', content: instruction } : undefined;
  return {
    iteration: k,
    expectPhase,
    expectPendingFinal: pendingFinal,
    callMode,
    extraMessage,
    events,
    returnState,
    owner: delivery.owner,
    expectBatch,
  };
}

/**
 * Answers (tool_error) the calls whose tool jobs — children of this delivery's job — failed for good. BullMQ runs a
 * parent only after every child finished or failed, so the parent is the one job that always learns of a failure: no
 * extra job needs to be published for it. Returns whether a call was answered now.
 */
export async function answerFailedChildren(
  store: RunStore,
  delivery: IterationDelivery,
  runId: string,
): Promise<boolean> {
  const failed = await delivery.failedChildren();
  let answered = false;
  for (const key of failed) {
    const callId = callIdOfToolJob(runId, key.slice(key.lastIndexOf(':') + 1));
    if (callId !== null && (await store.calls.closeToolCall(runId, callId, 'job_failed'))) answered = true;
  }
  return answered;
}

/**
 * This delivery takes iteration k's model call over (resuming it): the state it owns, or null when it moved on. When
 * the earlier delivery had streamed deltas of this iteration, the claim itself tells clients to discard them (one step:
 * no delta of the earlier delivery can reach them after the `llm.retry` that says so).
 */
export async function claimModelCall(
  store: RunStore,
  delivery: IterationDelivery,
  st: RunState,
  k: number,
): Promise<RunState | null> {
  const owner = delivery.owner;
  if (st.owner === owner) return st;
  const discard: NewEvent = {
    type: 'llm.retry',
    data: {
      provider: st.request.model.provider,
      model: st.request.model.name,
      attempt: 2,
      reason: 'worker_restarted',
      discardOutput: true,
    },
  };
  const claimed = await store.claimModelCall(st.id, k, st.owner, owner, discard);
  return claimed ? { ...st, owner } : null;
}
