import { toolCallData, type ToolOutcome } from '@agentloop/protocol';
import { eventTemplate, luaString } from './event-templates.js';

/**
 * How a call that will not run is answered, by why: `cancelled` (the run is ending before it ran), `run_ended` (the run
 * ended while it was queued or running: a batch closed by the end), `job_failed` (its job failed for good), `no_runner`
 * (no runner of its pool took it up in time), `outcome_unknown` (cut off mid-execution, not retryable), `skipped` (the
 * run's wall-clock budget is spent).
 */
export const CLOSED_CALLS = {
  cancelled: {
    status: 'cancelled',
    error: { code: 'cancelled', message: 'The run was cancelled before this call ran.', retryable: false },
  },
  run_ended: {
    status: 'cancelled',
    error: { code: 'cancelled', message: 'The run was cancelled before this call finished.', retryable: false },
  },
  job_failed: {
    status: 'error',
    error: { code: 'tool_error', message: 'The tool call could not be executed: its job failed.', retryable: true },
  },
  no_runner: {
    status: 'error',
    error: {
      code: 'tool_error',
      message: 'No tool-runner of its pool took this call up in time (the pool may have no running runner).',
      retryable: true,
    },
  },
  outcome_unknown: {
    status: 'error',
    error: {
      code: 'outcome_unknown',
      message:
        'The worker executing this call stopped mid-execution and the tool must not be retried: its outcome is unknown.',
      retryable: false,
    },
  },
  skipped: {
    status: 'skipped',
    error: {
      code: 'skipped',
      message: 'Skipped: the run exceeded its wall-clock budget (maxWallMs).',
      retryable: false,
    },
  },
} as const satisfies Record<string, { status: ToolOutcome['status']; error: NonNullable<ToolOutcome['error']> }>;

export type CloseKind = keyof typeof CLOSED_CALLS;

/**
 * CLOSED_CALLS compiled into the run scripts (lua/common.lua closeCall), each answer whole: the stored outcome, the
 * content the model sees and the template of its tool.call event (event-templates.ts), whose call id, name and
 * arguments the script fills in from the call's record, read in the same step.
 */
export function closedCallsLua(): string {
  const rows = Object.entries(CLOSED_CALLS).map(([kind, a]) => {
    const content = JSON.stringify({ ok: false, error: a.error });
    const outcome = { status: a.status, content, error: a.error };
    const event = eventTemplate((slot) =>
      toolCallData({ callId: slot('callId'), name: slot('name'), arguments: slot('display') }, a.status, outcome),
    );
    return `${kind} = { outcome = ${luaString(JSON.stringify(outcome))}, content = ${luaString(content)}, event = ${luaString(event)} }`;
  });
  return `local CLOSED = { ${rows.join(', ')} }\n`;
}
