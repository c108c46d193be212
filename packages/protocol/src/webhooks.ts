import { z } from 'zod';
import { RunIdSchema } from './jobs.js';

/** What a run's `notify` delivers when it lists no events (SPEC §2). */
export const DEFAULT_NOTIFY_EVENTS = ['run.paused', 'run.completed', 'run.failed', 'run.cancelled'] as const;

export const WebhookStatusSchema = z.enum(['pending', 'delivered', 'failed']);
export type WebhookStatus = z.infer<typeof WebhookStatusSchema>;

/** One delivery as `GET /v1/runs/:id/webhooks` lists it (SPEC §2). */
export const WebhookDeliverySchema = z.object({
  /** The `webhook-id` header, the same on every attempt. */
  webhookId: z.string(),
  type: z.string(),
  status: WebhookStatusSchema,
  attempts: z.number().int(),
  /** The status of the last answer; null before the first attempt and after one that got none (timeout, refused connection). */
  lastStatusCode: z.number().int().nullable(),
  /** When the next attempt is due (ISO); null when none is scheduled. */
  nextAttemptAt: z.string().nullable(),
});
export type WebhookDelivery = z.infer<typeof WebhookDeliverySchema>;
export const WebhookDeliveriesSchema = z.object({ data: z.array(WebhookDeliverySchema) });

/** A delivery as the run's delivery log keeps it (times in ms). */
export const WebhookRecordSchema = z.object({
  /** The event's seq (its envelope is the run's event seq). */
  seq: z.number().int().positive(),
  type: z.string(),
  status: WebhookStatusSchema,
  attempts: z.number().int().min(0),
  lastStatusCode: z.number().int().nullable(),
  nextAttemptAt: z.number().nullable(),
  /** When it was first attempted: retries go on for 24 h from here. */
  firstAttemptAt: z.number().nullable(),
});
export type WebhookRecord = z.infer<typeof WebhookRecordSchema>;

/** The `webhook-id` of a run's delivery of event `seq`: stable across every attempt. */
export const webhookId = (runId: string, seq: number) => `msg_${runId}_${seq}`;

/**
 * `deliver` job on queue `webhooks`: works off run `runId`'s pending deliveries, oldest first, as generation `gen` of
 * its delivery job (one job per run at a time; the log says which generation owns it).
 */
export const WebhookJobSchema = z.object({ runId: RunIdSchema, gen: z.number().int().positive() });
export type WebhookJob = z.infer<typeof WebhookJobSchema>;
/** `<runId>.<gen>`: a run id holds no `.` (toolJobId), and BullMQ refuses `:`. */
export const webhookJobId = (runId: string, gen: number) => `${runId}.${gen}`;
