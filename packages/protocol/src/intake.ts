import { QUEUES } from './keys.js';
import type { RunRequestInput } from './run-request.js';

/** Who a `requests` job is for, and the ids that make it apply once (SPEC §2, queue intake). */
export interface RunRequestJobOptions {
  tenantId: string;
  idempotencyKey?: string;
  runId?: string;
}

/** The BullMQ job a backend adds to queue `requests` for one run: its name, payload and options. */
export interface RunRequestJob {
  name: 'run';
  data: { tenantId: string; idempotencyKey?: string; runId?: string; request: RunRequestInput };
  opts: { jobId?: string; removeOnComplete: { age: number }; removeOnFail: { age: number } };
}

const DAY_S = 86_400;

/**
 * The `requests` job of a run (SPEC §2). With an idempotency key the job id is derived from (tenant, key), hashed so
 * that any characters in either make one valid id and tenants never collide: adding the same request twice makes
 * one job. Web Crypto, so the id is the same whichever runtime computes it (and the same as earlier builds').
 */
export async function runRequestJob(request: RunRequestInput, opts: RunRequestJobOptions): Promise<RunRequestJob> {
  const data = { tenantId: opts.tenantId, idempotencyKey: opts.idempotencyKey, runId: opts.runId, request };
  const jobId = opts.idempotencyKey
    ? `idem-${await sha256Base64Url(JSON.stringify([opts.tenantId, opts.idempotencyKey]))}`
    : undefined;
  return { name: 'run', data, opts: { jobId, removeOnComplete: { age: DAY_S }, removeOnFail: { age: DAY_S } } };
}

async function sha256Base64Url(text: string): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
  return btoa(String.fromCharCode(...digest))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
}

/**
 * The prefix of a deployment's queues (`prefix`: its AGENTLOOP_PREFIX, as set) for a backend's connection: on a Redis
 * Cluster connection (ioredis' `isCluster`) a plain name is made the hash tag the deployment itself puts its queues
 * under (`{agentloop}`, SPEC §1); a name with braces is taken as it is.
 */
export function queuePrefix(prefix: string, connection: unknown): string {
  const cluster = (connection as { isCluster?: boolean } | null)?.isCluster === true;
  return cluster && !/[{}]/.test(prefix) ? `{${prefix}}` : prefix;
}

/** Options of the deprecated `enqueueRun` of this package; `@agentloop/client/queue` has the typed ones. */
export interface EnqueueRunOptions extends RunRequestJobOptions {
  /** The backend's own ioredis connection (or connection options), as bullmq takes it. */
  connection: unknown;
  /** AGENTLOOP_PREFIX of the deployment [agentloop]. */
  prefix?: string;
}

/** Not a literal in `import()`: a bundler would otherwise pull bullmq (and Node's modules) into browser bundles. */
const BULLMQ = 'bullmq';

/**
 * Queue intake without HTTP (SPEC §2).
 * @deprecated Use `enqueueRun` from `@agentloop/client/queue`: the client is the home of queue intake and protocol
 * has no Redis dependency. This copy stays, loading the backend's own bullmq when called, for code written to
 * SPEC §2's "protocol exports a typed helper"; it makes the same job (`runRequestJob`) and will go with the next
 * major version.
 */
export async function enqueueRun(request: RunRequestInput, opts: EnqueueRunOptions) {
  const { Queue } = (await import(BULLMQ)) as typeof import('bullmq');
  const queue = new Queue(QUEUES.requests, {
    connection: opts.connection as never,
    prefix: queuePrefix(opts.prefix ?? 'agentloop', opts.connection),
  });
  try {
    const job = await runRequestJob(request, opts);
    return await queue.add(job.name, job.data, job.opts);
  } finally {
    await queue.close();
  }
}
