import type { AdvanceJob } from '@agentloop/protocol';
import type { RunState } from '@agentloop/runtime';
import { decideAdvance } from '../loop/decide-advance.js';

/**
 * How the resumed iteration will start, decided here from the state just read (what its job would decide after
 * reading it again): the job can then start in one step. Its compare-and-set catches a plan that went stale.
 */
export function resumePlan(st: RunState): AdvanceJob['plan'] {
  // a wall-clock budget may run out while the resume waits in the queue: its job reads the clock when it starts
  if (st.request.limits.maxWallMs !== null) return undefined;
  const k = st.iteration + 1;
  const action = decideAdvance(
    { ...st, status: 'running', phase: 'tools', resuming: true, pending: [] },
    k,
    Date.now(),
  );
  // (a repair call carries a message the plan cannot: its job reads the state; a paused run never owes one anyway)
  return action.kind === 'start' && !action.repair
    ? { callMode: action.callMode, pendingFinal: st.pendingFinal, iterUsage: st.iterUsage }
    : undefined;
}
