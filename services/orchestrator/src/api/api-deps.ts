import type express from 'express';
import type { EventHub, Logger, Metrics, Partitions, TenantLimiter, ToolCatalog } from '@agentloop/runtime';
import type { RunIntake } from '../intake.js';
import type { ServicePartition } from '../service-partition.js';
import type { ServerEventStreams } from './sse.js';
import type { ConsoleOptions } from './console.js';

/** What the API's routes use. */
export interface ApiDeps {
  /** The deployment's partitions: a run's reads and steps go to the one that holds it. */
  partitions: Partitions<ServicePartition>;
  intake: RunIntake;
  hub: EventHub;
  catalog: ToolCatalog;
  logger: Logger;
  apiKeys: Map<string, string>;
  authRequired: boolean;
  metricsText: () => Promise<string>;
  /** Of metricsText (OpenMetrics when exemplars are on) [Prometheus text 0.0.4]. */
  metricsContentType?: string;
  /** Why the process is not ready (null: ready; notReadyReason). Must answer at once, also while Redis is away. */
  ready: () => Promise<string | null>;
  /** Bull Board (mounted at /admin/queues when an admin key is configured). */
  admin?: express.Router;
  /** AGENTLOOP_TENANT_LIMITS (requests per second, open streams); null when no tenant has limits. */
  limiter?: TenantLimiter | null;
  metrics?: Metrics;
  /** The server's event streams, ended by its shutdown. */
  eventStreams?: ServerEventStreams;
  /** AGENTLOOP_CORS_ORIGINS: browser origins allowed to call the API (none: no CORS headers at all). */
  corsOrigins?: readonly string[];
  /** The web console at /console (its built directory, its trace link); false: not served. */
  console?: ConsoleOptions | false;
}
