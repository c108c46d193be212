import type { Message } from '@agentloop/protocol';
import type { Started } from '@agentloop/runtime';
import type { Ahead } from './start-ahead.js';
import type { ResponsePlan } from './plan-response.js';

/**
 * What iteration k+1's start will append and count, known before Redis answers: the batch's tool messages in call
 * order (each call's content, as `startIteration-18.lua`'s batchMessages builds them: answered in the checkpoint, or
 * the read this job ran), then the start's own message (a finalize instruction or the repair). Null when a call of
 * the batch has no outcome here (nothing is predicted then). `transcriptLength`: the history before k's response.
 */
export function predictedStart(
  plan: ResponsePlan,
  ahead: Ahead,
  transcriptLength: number,
  toolCallsBefore: number,
): Started | null {
  const results = new Map(ahead.results.map((r) => [r.callId, r.outcome]));
  const appended: Message[] = [];
  let executed = 0;
  for (const c of plan.calls) {
    const outcome = c.outcome ?? results.get(c.call.id);
    if (!outcome) return null;
    if (outcome.executed) executed++;
    appended.push({ role: 'tool', toolCallId: c.call.id, content: outcome.content });
  }
  if (ahead.params.extraMessage) appended.push(ahead.params.extraMessage);
  return {
    length: transcriptLength + 1 + appended.length,
    toolCalls: toolCallsBefore + executed,
    resumed: false,
    edited: false,
    appended,
    state: null,
  };
}

/** Whether the start Redis answered is the one predicted (what the model was sent is what the run recorded). */
export function samePrediction(actual: Started, predicted: Started): boolean {
  const same = (a: Message, b: Message) =>
    a.role === b.role && a.content === b.content && a.toolCallId === b.toolCallId;
  return (
    actual.length === predicted.length &&
    actual.toolCalls === predicted.toolCalls &&
    !actual.edited &&
    actual.appended.length === predicted.appended.length &&
    actual.appended.every((m, i) => same(m, predicted.appended[i]!))
  );
}
