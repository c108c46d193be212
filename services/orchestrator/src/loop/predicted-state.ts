import type { CallMode } from '@agentloop/protocol';
import type { RunState } from '@agentloop/runtime';
import type { ResponsePlan } from './plan-response.js';

/**
 * The state iteration k's checkpoint leaves (a run that goes on: no answer, no pause), as this process knows it without
 * reading it: the next iteration's guess, which that iteration's start checks by its compare-and-set.
 */
export function stateAfterCheckpoint(st: RunState, k: number, plan: ResponsePlan): RunState {
  const { checkpoint } = plan;
  return {
    ...st,
    phase: 'tools',
    iteration: k,
    iterUsage: plan.iterationUsage,
    pendingFinal: checkpoint.pendingFinal,
    batch: plan.calls.map((c) => c.call.id),
    repeatFingerprint: checkpoint.repeat.fingerprint,
    repeatCount: checkpoint.repeat.count,
    usage: { ...plan.totals, toolCalls: st.usage.toolCalls },
    outputRepair: checkpoint.outputRepair ?? st.outputRepair,
  };
}

/** The state iteration k's start leaves: its model call owned by `owner`, `toolCalls` as the start counted them. */
export function stateAfterStart(
  st: RunState,
  k: number,
  callMode: CallMode,
  owner: string,
  toolCalls: number,
): RunState {
  return { ...st, iteration: k, phase: 'model', status: 'running', callMode, owner, usage: { ...st.usage, toolCalls } };
}
