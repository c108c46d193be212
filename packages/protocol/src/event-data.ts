import type { EventData, ToolCallStatus } from './events.js';
import type { Usage } from './snapshot.js';
import type { ToolOutcome } from './tool-result.js';

/*
 * Builders of the event data that run scripts write too: each event type's one home. The scripts get their shape
 * from these, rendered into templates (runtime's event-templates.ts), and fill in only the values they read.
 */

export type ToolCallData = EventData<'tool.call'>;
export type ResumedDecision = EventData<'run.resumed'>['decisions'][number];

/** A call as its tool.call events show it: its arguments (as shown), and the model's own when a decision edited them. */
export interface ShownCall {
  callId: string;
  name: string;
  arguments: unknown;
  originalArguments?: unknown;
}

/** The data of a tool.call event: the call, its status and, once answered, its result (completed) or error, and how long it ran. */
export function toolCallData(
  call: ShownCall,
  status: ToolCallStatus,
  answer?: Pick<ToolOutcome, 'status' | 'result' | 'error' | 'durationMs'>,
): ToolCallData {
  return {
    callId: call.callId,
    name: call.name,
    arguments: call.arguments,
    ...(call.originalArguments !== undefined ? { originalArguments: call.originalArguments } : {}),
    status,
    ...(answer?.status === 'completed'
      ? answer.result !== undefined
        ? { result: answer.result }
        : {}
      : answer?.error
        ? { error: answer.error }
        : {}),
    ...(answer?.durationMs !== undefined ? { durationMs: answer.durationMs } : {}),
  };
}

/** The data of iteration.completed: the iteration's usage, none when it ended before its model call answered. */
export function iterationCompletedData(
  iteration: number,
  usage: Partial<Usage> = {},
): EventData<'iteration.completed'> {
  return { iteration, usage };
}

/** One decision as run.resumed lists it. */
export function resumedDecision(callId: string, action: string): ResumedDecision {
  return { callId, action };
}

/** The data of run.resumed: every decision of the pause (resumedDecision), in pending order. */
export function runResumedData(decisions: ResumedDecision[]): EventData<'run.resumed'> {
  return { decisions };
}
