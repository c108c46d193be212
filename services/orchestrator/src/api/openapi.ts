import { z } from 'zod';
import {
  CancelRunResponseSchema,
  CreateRunResponseSchema,
  DecisionRequestSchema,
  DecisionResponseSchema,
  EVENT_TYPES,
  EventDataSchemas,
  EventEnvelopeSchema,
  RunListPageSchema,
  RunRequestSchema,
  RunSnapshotSchema,
  ThreadResponseSchema,
  ToolCatalogResponseSchema,
  WebhookDeliveriesSchema,
} from '@agentloop/protocol';

const json = (schema: z.ZodType, io: 'input' | 'output' = 'output') =>
  z.toJSONSchema(schema, { io, unrepresentable: 'any' });

/** OpenAPI 3.1 of the /v1 API, generated from the protocol's zod schemas. */
export function openApiDocument(): Record<string, unknown> {
  const err = { $ref: '#/components/schemas/Error' };
  const errors = (...codes: number[]) =>
    Object.fromEntries(
      codes.map((c) => [String(c), { description: 'error', content: { 'application/json': { schema: err } } }]),
    );
  const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
  const created = ref('CreateRunResponse');
  const body = (name: string) => ({ content: { 'application/json': { schema: ref(name) } } });
  // every event type's envelope, its data schema included (SPEC §4): the stream's frames are one of these
  const eventSchemas = Object.fromEntries(
    EVENT_TYPES.map((t) => [
      `Event_${t.replace('.', '_')}`,
      {
        allOf: [
          ref('EventEnvelope'),
          {
            type: 'object',
            properties: { type: { const: t }, data: json(EventDataSchemas[t]) },
            required: ['type', 'data'],
          },
        ],
      },
    ]),
  );
  return {
    openapi: '3.1.0',
    info: {
      title: 'agentloop',
      version: '1.0.0',
      description: 'Distributed LLM tool-calling agent runs over Redis and BullMQ.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: {
        RunRequest: json(RunRequestSchema, 'input'),
        RunSnapshot: json(RunSnapshotSchema),
        Thread: json(ThreadResponseSchema),
        DecisionRequest: json(DecisionRequestSchema, 'input'),
        EventEnvelope: json(EventEnvelopeSchema),
        WebhookDeliveries: json(WebhookDeliveriesSchema),
        CreateRunResponse: json(CreateRunResponseSchema),
        RunListPage: json(RunListPageSchema),
        DecisionResponse: json(DecisionResponseSchema),
        CancelRunResponse: json(CancelRunResponseSchema),
        ToolCatalog: json(ToolCatalogResponseSchema),
        Event: { oneOf: Object.keys(eventSchemas).map(ref) },
        ...eventSchemas,
        Error: {
          type: 'object',
          properties: {
            error: {
              type: 'object',
              properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
              required: ['code', 'message'],
            },
          },
          required: ['error'],
        },
      },
    },
    security: [{ bearer: [] }],
    paths: {
      '/v1/runs': {
        post: {
          summary: 'Create a run',
          parameters: [
            { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 255 } },
          ],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/RunRequest' } } },
          },
          responses: {
            '202': { description: 'created', content: { 'application/json': { schema: created } } },
            '200': {
              description: 'the run this Idempotency-Key already created',
              content: { 'application/json': { schema: created } },
            },
            ...errors(400, 401, 413, 422, 429, 500),
          },
        },
        get: {
          summary: "List the tenant's runs, newest first",
          parameters: [
            {
              name: 'status',
              in: 'query',
              schema: { type: 'string', enum: ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'] },
            },
            { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
            { name: 'cursor', in: 'query', schema: { type: 'string' } },
          ],
          responses: {
            '200': { description: 'runs', ...body('RunListPage') },
            ...errors(400, 401),
          },
        },
      },
      '/v1/runs/{id}': {
        get: {
          summary: 'A run snapshot',
          parameters: [
            idParam,
            { name: 'include', in: 'query', schema: { type: 'string', enum: ['messages', 'history'] } },
          ],
          responses: {
            '200': {
              description: 'snapshot',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/RunSnapshot' } } },
            },
            ...errors(401, 404),
          },
        },
      },
      '/v1/runs/{id}/events': {
        get: {
          summary: 'Server-Sent Events of a run (resumable with Last-Event-ID or ?after=)',
          parameters: [
            idParam,
            { name: 'after', in: 'query', schema: { type: 'integer', minimum: 0 } },
            { name: 'Last-Event-ID', in: 'header', schema: { type: 'string' } },
          ],
          responses: {
            '200': {
              description: "event stream: each frame's data is an Event",
              content: { 'text/event-stream': { schema: ref('Event') } },
            },
            '204': { description: 'the replay point is at or past the terminal event: nothing more will come' },
            ...errors(400, 401, 404),
          },
        },
      },
      '/v1/runs/{id}/decisions': {
        post: {
          summary: 'Decide paused tool calls',
          parameters: [idParam],
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/DecisionRequest' } } },
          },
          responses: { '202': { description: 'applied', ...body('DecisionResponse') }, ...errors(400, 401, 404, 409) },
        },
      },
      '/v1/runs/{id}/calls/{callId}': {
        get: {
          summary: "One tool call's full record: arguments, status, decision and the uncapped result (extension)",
          parameters: [idParam, { name: 'callId', in: 'path', required: true, schema: { type: 'string' } }],
          responses: {
            '200': {
              description: 'the call',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    properties: {
                      callId: { type: 'string' },
                      name: { type: 'string' },
                      arguments: {},
                      iteration: { type: 'integer' },
                      status: {
                        type: 'string',
                        description: 'pending, running, or the outcome: completed, error, denied, skipped, cancelled',
                      },
                      decision: { type: ['string', 'null'] },
                      result: {},
                      error: { type: 'object' },
                      content: { type: 'string' },
                      durationMs: { type: 'number' },
                    },
                    required: ['callId', 'name', 'arguments', 'status'],
                  },
                },
              },
            },
            ...errors(401, 404),
          },
        },
      },
      '/v1/runs/{id}/webhooks': {
        get: {
          summary: "The run's webhook deliveries (notify), oldest first",
          parameters: [idParam],
          responses: {
            '200': {
              description: 'deliveries',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookDeliveries' } } },
            },
            ...errors(401, 404),
          },
        },
      },
      '/v1/runs/{id}/cancel': {
        post: {
          summary: 'Cancel a run',
          parameters: [idParam],
          responses: {
            '202': { description: 'cancelled, or cancelling', ...body('CancelRunResponse') },
            ...errors(401, 404, 409),
          },
        },
      },
      '/v1/threads/{id}': {
        get: {
          summary: 'A thread: its runs (oldest first) and its conversation so far',
          parameters: [idParam],
          responses: {
            '200': {
              description: 'the thread',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Thread' } } },
            },
            ...errors(401, 404),
          },
        },
      },
      '/v1/tools': {
        get: {
          summary: 'Tool catalog',
          responses: { '200': { description: 'tools', ...body('ToolCatalog') }, ...errors(401) },
        },
      },
      '/v1/openapi.json': {
        get: { summary: 'This document', security: [], responses: { '200': { description: 'OpenAPI 3.1' } } },
      },
      '/healthz': {
        get: {
          summary: 'Liveness',
          security: [],
          responses: {
            '200': {
              description: 'alive',
              content: { 'application/json': { schema: { type: 'object', properties: { status: { const: 'ok' } } } } },
            },
          },
        },
      },
      '/readyz': {
        get: {
          summary: 'Readiness',
          security: [],
          responses: {
            '200': {
              description: 'ready',
              content: {
                'application/json': {
                  schema: { type: 'object', properties: { status: { const: 'ready' } }, required: ['status'] },
                },
              },
            },
            '503': {
              description: 'not ready',
              content: {
                'application/json': {
                  schema: {
                    type: 'object',
                    properties: { status: { const: 'not_ready' }, reason: { type: 'string' } },
                    required: ['status', 'reason'],
                  },
                },
              },
            },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          security: [],
          responses: {
            '200': { description: 'Prometheus text format', content: { 'text/plain': { schema: { type: 'string' } } } },
          },
        },
      },
    },
  };
}
