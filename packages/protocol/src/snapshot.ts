import { z } from 'zod';
import { MessageSchema } from './message.js';
import { ModelSpecSchema } from './run-request.js';

export const RunStatusSchema = z.enum(['queued', 'running', 'paused', 'completed', 'failed', 'cancelled']);
export type RunStatus = z.infer<typeof RunStatusSchema>;
export const TERMINAL_STATUSES: readonly RunStatus[] = ['completed', 'failed', 'cancelled'];
export const isTerminalStatus = (s: string): boolean => (TERMINAL_STATUSES as readonly string[]).includes(s);

export const StopReasonSchema = z.enum([
  'final_answer',
  'max_iterations',
  'context_limit',
  'budget_exceeded',
  'loop_detected',
  'cancelled',
]);
export type StopReason = z.infer<typeof StopReasonSchema>;

export const UsageSchema = z.object({
  promptTokens: z.number().int(),
  completionTokens: z.number().int(),
  reasoningTokens: z.number().int(),
  /** Prompt tokens the provider served from its prompt cache (part of promptTokens, priced at the cached rate). */
  cachedTokens: z.number().int().default(0),
  totalTokens: z.number().int(),
  costUsd: z.number(),
  llmCalls: z.number().int(),
  toolCalls: z.number().int(),
});
export type Usage = z.infer<typeof UsageSchema>;

export const PauseTypeSchema = z.enum(['awaiting_approval', 'requires_client_execution']);
export type PauseType = z.infer<typeof PauseTypeSchema>;

export const PendingCallSchema = z.object({
  callId: z.string(),
  name: z.string(),
  arguments: z.unknown(),
  pauseType: PauseTypeSchema,
});
export type PendingCall = z.infer<typeof PendingCallSchema>;

export const ErrorInfoSchema = z.object({ code: z.string(), message: z.string() });
export type ErrorInfo = z.infer<typeof ErrorInfoSchema>;

export const RunSnapshotSchema = z.object({
  id: z.string(),
  status: RunStatusSchema,
  iteration: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
  model: ModelSpecSchema,
  mode: z.enum(['interactive', 'headless']),
  stopReason: StopReasonSchema.nullable(),
  output: z.string().nullable(),
  /** The thread the run continues (SPEC §2 Threads), or null. */
  threadId: z.string().nullable().default(null),
  /** Runs with `output.schema` only: the parsed structured answer (null until the run completes with one). */
  outputJson: z.unknown().optional(),
  error: ErrorInfoSchema.nullable(),
  pending: z.array(PendingCallSchema),
  usage: UsageSchema,
  metadata: z.record(z.string(), z.unknown()),
  /** The run's trace id (SPEC §8: 32 hex digits) when it was created with tracing on; the web console links it. */
  traceId: z.string().optional(),
  messages: z.array(MessageSchema).optional(),
  history: z.array(MessageSchema).optional(),
});
export type RunSnapshot = z.infer<typeof RunSnapshotSchema>;
