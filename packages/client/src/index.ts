/**
 * `@agentloop/client`: the typed HTTP client of the agentloop API, for Node and browsers (fetch and Web APIs only:
 * no `node:` module, no Buffer, no process). Queue intake is the separate Node entry `@agentloop/client/queue`.
 * @module
 */
export * from './agentloop-client.js';
export * from './runs-api.js';
export type { ClientOptions, RequestOptions } from './http-transport.js';
export * from './api-error.js';
export * from './follow-run.js';
export * from './sse.js';
export * from './webhook-verify.js';
// the protocol's types of what the client sends and receives, so that an app needs no second import for them
export type {
  CancelRunResponse,
  CreateRunResponse,
  DecisionInput,
  DecisionResponse,
  EventEnvelope,
  EventType,
  Message,
  PendingCall,
  RunListPage,
  RunRequestInput,
  RunSnapshot,
  RunStatus,
  ThreadResponse,
  ToolInfo,
  Usage,
  WebhookDeliveryInfo,
  WebhookEventBody,
} from '@agentloop/protocol';
