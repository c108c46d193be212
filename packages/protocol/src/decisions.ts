import { z } from 'zod';

export const DecisionSchema = z.discriminatedUnion('action', [
  z.object({
    callId: z.string().min(1),
    action: z.literal('approve'),
    arguments: z.record(z.string(), z.unknown()).optional(),
  }),
  z.object({ callId: z.string().min(1), action: z.literal('deny'), reason: z.string().max(10_000).optional() }),
  z.object({
    callId: z.string().min(1),
    action: z.literal('submit_result'),
    result: z.unknown(),
    isError: z.boolean().default(false),
  }),
]);
export type Decision = z.infer<typeof DecisionSchema>;
/** A decision as a caller writes it (`isError` may be left out). */
export type DecisionInput = z.input<typeof DecisionSchema>;

export const DecisionRequestSchema = z.object({ decisions: z.array(DecisionSchema).min(1).max(200) });
export type DecisionRequest = z.infer<typeof DecisionRequestSchema>;
