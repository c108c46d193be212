import { z } from 'zod';

export const ToolErrorCodeSchema = z.enum([
  'unknown_tool',
  'invalid_arguments',
  'tool_error',
  'timeout',
  'denied',
  'skipped',
  'cancelled',
  'loop_detected',
  'result_too_large',
  'blocked_url',
  'outcome_unknown',
]);
export type ToolErrorCode = z.infer<typeof ToolErrorCodeSchema>;

export interface ToolErrorInfo {
  code: ToolErrorCode;
  message: string;
  retryable: boolean;
}

/** The final outcome of one tool call, as recorded on the run. */
export const ToolOutcomeSchema = z.object({
  status: z.enum(['completed', 'error', 'denied', 'skipped', 'cancelled']),
  /** The text the model sees in the tool message (already capped). */
  content: z.string(),
  result: z.unknown().optional(),
  error: z.object({ code: ToolErrorCodeSchema, message: z.string(), retryable: z.boolean() }).optional(),
  durationMs: z.number().optional(),
  /** Set when a tool-runner invoked the tool (counted in usage.toolCalls). */
  executed: z.boolean().optional(),
});
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

const RETRYABLE: ReadonlySet<ToolErrorCode> = new Set(['timeout', 'tool_error', 'outcome_unknown']);

/** A failure answered to the model as a tool result: `{"ok":false,"error":{code,message,retryable}}`. */
export function toolErrorOutcome(
  code: ToolErrorCode,
  message: string,
  extra: { durationMs?: number; retryable?: boolean } = {},
): ToolOutcome {
  const { retryable = RETRYABLE.has(code), ...rest } = extra;
  const error = { code, message, retryable };
  const status =
    code === 'denied' ? 'denied' : code === 'skipped' ? 'skipped' : code === 'cancelled' ? 'cancelled' : 'error';
  return { status, content: JSON.stringify({ ok: false, error }), error, ...rest };
}

/** Text a model chose (a tool name, its arguments) as quoted in a tool result: at most `max` characters. */
export function clipText(s: string, max: number): string {
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** Validation problems as quoted in a tool result: the first 20, each at most 300 characters, then how many more. */
export function problemList(problems: readonly string[]): string {
  const shown = problems.slice(0, 20).map((p) => clipText(p, 300));
  if (problems.length > shown.length) shown.push(`… and ${problems.length - shown.length} more`);
  return shown.join('; ');
}

/** The model-facing text of a successful result: strings as they are, anything else as JSON. */
export function resultContent(result: unknown): string {
  if (typeof result === 'string') return result;
  return JSON.stringify(result === undefined ? null : result);
}
