import { z } from 'zod';
import { ErrorInfoSchema, PendingCallSchema, StopReasonSchema, UsageSchema } from './snapshot.js';

export const ToolCallStatusSchema = z.enum([
  'proposed',
  'running',
  'completed',
  'error',
  'awaiting_approval',
  'requires_client_execution',
  'approved',
  'denied',
  'skipped',
  'cancelled',
]);
export type ToolCallStatus = z.infer<typeof ToolCallStatusSchema>;

const iterationOnly = z.object({ iteration: z.number().int() });
const textDelta = z.object({ iteration: z.number().int(), text: z.string() });

/** Data schema of every event type of SPEC §4 (plus the project's own, documented in docs/ARCHITECTURE.md). */
export const EventDataSchemas = {
  'run.queued': z.object({}),
  'run.started': z.object({}),
  'iteration.started': iterationOnly,
  'message.delta': textDelta,
  'reasoning.delta': textDelta,
  'tool.call': z.object({
    callId: z.string(),
    name: z.string(),
    arguments: z.unknown(),
    originalArguments: z.unknown().optional(),
    status: ToolCallStatusSchema,
    result: z.unknown().optional(),
    error: z.object({ code: z.string(), message: z.string(), retryable: z.boolean().optional() }).optional(),
    durationMs: z.number().optional(),
  }),
  'run.paused': z.object({ pending: z.array(PendingCallSchema), expiresAt: z.string() }),
  'run.resumed': z.object({ decisions: z.array(z.object({ callId: z.string(), action: z.string() })) }),
  'context.compressed': z.object({
    strategy: z.enum(['summarize', 'prune']),
    tokensBefore: z.number(),
    tokensAfter: z.number(),
  }),
  'llm.retry': z.object({
    provider: z.string(),
    model: z.string(),
    attempt: z.number().int(),
    reason: z.string(),
    discardOutput: z.boolean(),
  }),
  'llm.fallback': z.object({ from: z.string(), to: z.string(), reason: z.string() }),
  'iteration.completed': z.object({ iteration: z.number().int(), usage: UsageSchema.partial() }),
  /**
   * A final answer of a run with `output.schema` that does not parse or validate: `repair` when one repair turn
   * follows (this iteration's deltas were not the output), else the run fails `output_invalid`.
   */
  'output.invalid': z.object({ iteration: z.number().int(), errors: z.array(z.string()), repair: z.boolean() }),
  'run.completed': z.object({
    output: z.string().nullable(),
    outputJson: z.unknown().optional(),
    stopReason: StopReasonSchema,
    iterations: z.number().int(),
    usage: UsageSchema,
  }),
  'run.failed': z.object({ error: ErrorInfoSchema.extend({ details: z.unknown().optional() }) }),
  'run.cancelled': z.object({ reason: z.string() }),
} as const;

export type EventType = keyof typeof EventDataSchemas;
export type EventData<T extends EventType> = z.infer<(typeof EventDataSchemas)[T]>;
export const EVENT_TYPES = Object.keys(EventDataSchemas) as EventType[];
export const TERMINAL_EVENT_TYPES: readonly EventType[] = ['run.completed', 'run.failed', 'run.cancelled'];

/** An event before it is sequenced: what code emits. */
export type NewEvent = { [T in EventType]: { type: T; data: EventData<T> } }[EventType];

export const EventEnvelopeSchema = z.object({
  seq: z.number().int().positive(),
  runId: z.string(),
  type: z.string(),
  at: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type EventEnvelope = z.infer<typeof EventEnvelopeSchema>;
