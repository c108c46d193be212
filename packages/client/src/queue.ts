import { Queue, type ConnectionOptions, type Job } from 'bullmq';
import {
  QUEUES,
  queuePrefix,
  runRequestJob,
  type RunRequestInput,
  type RunRequestJob,
  type RunRequestJobOptions,
} from '@agentloop/protocol';

/**
 * `@agentloop/client/queue`: queue intake, for Node backends in the agentloop deployment's trust zone. A separate entry
 * point from the HTTP client, so that a browser bundle of `@agentloop/client` never pulls bullmq and ioredis.
 * @module
 */

export interface EnqueueRunOptions extends RunRequestJobOptions {
  /** The backend's own ioredis connection (or connection options), as bullmq takes it. */
  connection: ConnectionOptions;
  /**
   * AGENTLOOP_PREFIX of the deployment [agentloop], as it is set: on a Redis Cluster connection a plain name is made
   * the hash tag the deployment's queues live under (`{agentloop}`), as the deployment does itself.
   */
  prefix?: string;
}

/** The job on queue `requests`; its return value, once a worker took it, is the run's id. */
export type RunRequestQueueJob = Job<RunRequestJob['data'], { id: string }, 'run'>;

/**
 * Queue intake (SPEC §2): a run without HTTP, as a job on queue `requests` added with the backend's own connection.
 * Resolves to the job, whose return value (`await job.waitUntilFinished(queueEvents)`) is `{id}`. Validation happens
 * on the consumer side, exactly as in the HTTP API: an invalid request becomes a run that ends `failed` with
 * `invalid_request`. The same `idempotencyKey` (or `runId`) makes one run however often it is enqueued; one that names
 * a run made from a different request fails the job, unretried, with a failedReason starting `idempotency_mismatch: `
 * (HTTP's 422), and that run is left as it is.
 */
export async function enqueueRun(request: RunRequestInput, opts: EnqueueRunOptions): Promise<RunRequestQueueJob> {
  const queue = new Queue<RunRequestJob['data'], { id: string }, 'run'>(QUEUES.requests, {
    connection: opts.connection,
    prefix: queuePrefix(opts.prefix ?? 'agentloop', opts.connection),
  });
  try {
    const job = await runRequestJob(request, opts);
    return await queue.add(job.name, job.data, job.opts);
  } finally {
    await queue.close();
  }
}
