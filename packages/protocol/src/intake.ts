import type { ConnectionOptions } from 'bullmq';
import { QUEUES } from './keys.js';
import type { RunRequestInput } from './run-request.js';

export interface EnqueueRunOptions {
  /** The backend's own ioredis connection (or connection options). */
  connection: ConnectionOptions;
  /** AGENTLOOP_PREFIX of the deployment [agentloop]. */
  prefix?: string;
  tenantId: string;
  idempotencyKey?: string;
  runId?: string;
}

/**
 * Queue intake for backends in the same trust zone (SPEC §2): enqueue a run without HTTP. Resolves to the job, whose
 * return value (`await job.waitUntilFinished(queueEvents)`) is `{id}`. Validation happens on the consumer side,
 * exactly as in the HTTP API: an invalid request becomes a run that ends `failed` with `invalid_request`. A `runId`
 * or `idempotencyKey` that names a run made from a different request fails the job, unretried, with a failedReason
 * starting `idempotency_mismatch: ` (HTTP's 422), and that run is left as it is.
 * bullmq is the backend's own (an optional peer dependency of protocol, loaded only when this is called): protocol
 * itself depends on zod alone. `@agentloop/client` re-exports this helper beside its HTTP client.
 */
export async function enqueueRun(request: RunRequestInput, opts: EnqueueRunOptions) {
  const [{ Queue }, { createHash }] = await Promise.all([import('bullmq'), import('node:crypto')]);
  const queue = new Queue(QUEUES.requests, { connection: opts.connection, prefix: opts.prefix ?? 'agentloop' });
  try {
    const payload = { tenantId: opts.tenantId, idempotencyKey: opts.idempotencyKey, runId: opts.runId, request };
    // one job per (tenant, key), whatever characters either holds (hashed: no collisions across tenants, no ':')
    const jobId = opts.idempotencyKey ? `idem-${createHash('sha256').update(JSON.stringify([opts.tenantId, opts.idempotencyKey])).digest('base64url')}` : undefined;
    return await queue.add('run', payload, { jobId, removeOnComplete: { age: 86_400 }, removeOnFail: { age: 86_400 } });
  } finally {
    await queue.close();
  }
}
