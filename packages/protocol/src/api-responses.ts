import { z } from 'zod';
import { WebhookDeliveriesSchema, WebhookDeliverySchema, type WebhookDelivery } from './webhooks.js';
import { EventEnvelopeSchema } from './events.js';
import { MessageSchema } from './message.js';
import { RunSnapshotSchema, RunStatusSchema } from './snapshot.js';

/** Answer of `POST /v1/runs`: 202 for a new run, 200 (current status) for an Idempotency-Key seen before. */
export const CreateRunResponseSchema = z.object({ id: z.string(), status: RunStatusSchema, eventsUrl: z.string() });
export type CreateRunResponse = z.infer<typeof CreateRunResponseSchema>;

/** One page of `GET /v1/runs`, newest first; `nextCursor` null on the last page. */
export const RunListPageSchema = z.object({ data: z.array(RunSnapshotSchema), nextCursor: z.string().nullable() });
export type RunListPage = z.infer<typeof RunListPageSchema>;

/** Answer of `POST /v1/runs/:id/decisions` (SPEC §5). */
export const DecisionResponseSchema = z.object({
  status: z.enum(['resumed', 'waiting']),
  remaining: z.array(z.string()),
});
export type DecisionResponse = z.infer<typeof DecisionResponseSchema>;

/** Answer of `POST /v1/runs/:id/cancel`: `cancelled` when it ended at once (a queued or paused run), else `cancelling`. */
export const CancelRunResponseSchema = z.object({ id: z.string(), status: z.enum(['cancelled', 'cancelling']) });
export type CancelRunResponse = z.infer<typeof CancelRunResponseSchema>;

/** One tool of `GET /v1/tools`. */
export const ToolInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  /** JSON Schema of the arguments. */
  parameters: z.unknown(),
  sideEffect: z.enum(['read', 'reversible', 'external', 'critical']),
  pool: z.string(),
});
export type ToolInfo = z.infer<typeof ToolInfoSchema>;
export const ToolCatalogResponseSchema = z.object({ data: z.array(ToolInfoSchema) });

/** One webhook delivery of a run (`GET /v1/runs/:id/webhooks`): webhooks.ts holds its one schema. */
export const WebhookDeliveryInfoSchema = WebhookDeliverySchema;
export type WebhookDeliveryInfo = WebhookDelivery;
export const RunWebhooksResponseSchema = WebhookDeliveriesSchema;

/** `GET /v1/threads/:id`: the thread's runs, oldest first, and its conversation so far. */
export const ThreadResponseSchema = z.object({
  id: z.string(),
  runs: z.array(z.string()),
  messages: z.array(MessageSchema),
});
export type ThreadResponse = z.infer<typeof ThreadResponseSchema>;

/** The JSON body a webhook POSTs (SPEC §2, Webhooks). */
export const WebhookEventBodySchema = z.object({
  type: z.string(),
  /** ISO time of the event. */
  timestamp: z.string(),
  data: z.object({ runId: z.string(), event: EventEnvelopeSchema, run: RunSnapshotSchema }),
});
export type WebhookEventBody = z.infer<typeof WebhookEventBodySchema>;
