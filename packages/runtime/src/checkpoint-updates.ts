import { wellFormedJson } from '@agentloop/protocol';
import { STATE_FIELD } from './run-state.js';
import type { CheckpointInput } from './run-store-types.js';
import type { RunScripts } from './run-scripts.js';

/**
 * checkpointResponse-18.lua: records iteration k's response and moves the run to its target, fenced by `owner` (the
 * delivery that owns the model call; '' = no fence). False when fenced or moved on, or the call ids already taken.
 */
export async function checkpointResponse(
  scripts: RunScripts,
  runId: string,
  c: CheckpointInput,
  owner: string,
): Promise<boolean | { taken: string[] }> {
  const calls = c.calls.map((x) => [x.id, wellFormedJson(x.meta), x.outcome ? wellFormedJson(x.outcome) : '']);
  const r = await scripts.statusRun('checkpointResponse', runId, (ev) => [
    c.iteration,
    wellFormedJson(c.message),
    checkpointTarget(c),
    wellFormedJson(checkpointUpdates(c)),
    wellFormedJson(calls),
    ev(c.events),
    c.pause ? c.pause.expiresAt : '',
    owner,
    wellFormedJson(checkpointIncrements(c)),
  ]);
  if (r.outcome === 'ids_taken') return { taken: r.values.map(String) };
  return r.outcome === 'recorded';
}

/** Where a checkpoint takes the run: `checkpointResponse-18.lua` sets that status and phase itself. */
export type CheckpointTarget = 'tools' | 'paused' | 'completed' | 'failed';

export function checkpointTarget(c: CheckpointInput): CheckpointTarget {
  if (c.final) return 'completed';
  if (c.failure) return 'failed';
  return c.pause ? 'paused' : 'tools';
}

/**
 * The state hash updates of a checkpoint (field, value, …), which `checkpointResponse-18.lua` applies in the same step
 * that records the assistant message and moves the run to its target: what the response means —
 * the answer and its structured output, the failure, or the calls, the pause or the repair turn. Never status or
 * phase: the script sets those for the target.
 */
export function checkpointUpdates(c: CheckpointInput): Array<string | number> {
  const updates: Array<string | number> = ['iterUsage', wellFormedJson(c.iterationUsage)];
  if (c.final) {
    updates.push('stopReason', c.final.stopReason, 'output', c.final.output);
    if ('outputJson' in c.final) updates.push(STATE_FIELD.outputJson, wellFormedJson(c.final.outputJson));
  } else if (c.failure) updates.push('stopReason', '', 'error', wellFormedJson(c.failure));
  else
    updates.push(
      'batch',
      wellFormedJson(c.calls.map((x) => x.id)),
      'pendingFinal',
      c.pendingFinal,
      'rfp',
      c.repeat.fingerprint,
      'rcount',
      c.repeat.count,
    );
  if (c.outputRepair) updates.push(STATE_FIELD.outputRepair, wellFormedJson(c.outputRepair));
  if (c.pause) updates.push('pending', wellFormedJson(c.pause.pending), 'pausedUntil', c.pause.expiresAt);
  return updates;
}

/** The usage fields a checkpoint adds this call's usage to (field, increment, …): the script adds them to what it reads. */
export function checkpointIncrements(c: CheckpointInput): Array<string | number> {
  const b = c.billed;
  if (!b) return [];
  return [
    'promptTokens',
    b.promptTokens,
    'completionTokens',
    b.completionTokens,
    'reasoningTokens',
    b.reasoningTokens,
    'cachedTokens',
    b.cachedTokens ?? 0,
    'totalTokens',
    b.totalTokens,
    'costUsd',
    b.costUsd.toFixed(10),
    'llmCalls',
    b.llmCalls,
  ];
}
