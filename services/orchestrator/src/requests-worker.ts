import { createHash } from 'node:crypto';
import { UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES, RequestJobSchema, TenantIdSchema } from '@agentloop/protocol';
import { IDLE_BLOCK_S, workerTakingJobs, type Logger, type Partition } from '@agentloop/runtime';
import type { RunIntake } from './intake.js';
import { zodIssues } from './intake.js';

/** Queue intake (SPEC §2): runs enqueued by backends on `requests`, validated exactly like the HTTP API. */
export class RequestsWorker {
  private worker: Worker | null = null;
  private reconciler: NodeJS.Timeout | null = null;
  constructor(
    private readonly redis: Redis,
    /** The deployment's own prefix: the `requests` queue is one for every partition. */
    private readonly prefix: string,
    private readonly intake: RunIntake,
    private readonly logger: Logger,
    /** How long a run may stay queued before its first job is added again (its creator may have died). */
    private readonly reconcileEveryMs = 10_000,
    /** The partitions whose queued runs this process looks after (the ones it serves) [every partition]. */
    private readonly served?: readonly Partition[],
  ) {}

  async start(): Promise<void> {
    this.worker = new Worker(QUEUES.requests, (job) => this.process(job), {
      connection: this.redis.duplicate(),
      prefix: this.prefix,
      concurrency: 20,
      drainDelay: IDLE_BLOCK_S,
    });
    this.worker.on('error', (err) => this.logger.error({ err }, 'requests worker error'));
    await this.worker.waitUntilReady();
    this.reconciler = setInterval(() => {
      this.intake
        .reconcileQueued(this.reconcileEveryMs, this.served)
        .catch((err: unknown) => this.logger.warn({ err }, 'queued-run reconciliation failed'));
    }, this.reconcileEveryMs);
    this.reconciler.unref();
  }

  handBack(): void {} // short jobs: nothing worth aborting

  /** Whether its worker takes jobs (readiness). */
  isRunning(): boolean {
    return workerTakingJobs(this.worker);
  }

  async close(): Promise<void> {
    if (this.reconciler) clearInterval(this.reconciler);
    await this.worker?.close();
  }

  private async process(job: Job): Promise<{ id: string }> {
    const envelope = RequestJobSchema.safeParse(job.data);
    if (!envelope.success) {
      // Without a tenant there is no one to own a failed run: record the problem on the job itself.
      // (retrying cannot make it valid: the job fails at once)
      if (!TenantIdSchema.safeParse(job.data?.tenantId).success)
        throw new UnrecoverableError(`invalid intake job: ${JSON.stringify(zodIssues(envelope.error))}`);
    }
    // an envelope with a tenant but an invalid runId or idempotencyKey is not dropped silently: its run (named by the
    // job) fails with the envelope's issues, so the backend learns its runId or key was not used
    const data = envelope.success
      ? envelope.data
      : {
          tenantId: String(job.data.tenantId),
          request: job.data?.request,
          idempotencyKey: undefined,
          runId: undefined,
        };
    // A redelivered job (a crash after the run was created) must find the same run: without a runId of its own, the
    // job's id names it.
    const runId = data.runId ?? runIdForJob(String(job.id));
    const badEnvelope = envelope.success
      ? undefined
      : {
          message: `the requests job is not a valid intake envelope: ${envelope.error.issues
            .map((i) => `${i.path.join('.')}: ${i.message}`)
            .join('; ')
            .slice(0, 500)}`,
          issues: zodIssues(envelope.error),
        };
    const res = await this.intake.create(data.tenantId, data.request, {
      idempotencyKey: data.idempotencyKey,
      runId,
      failInvalid: true,
      ...(badEnvelope ? { badEnvelope } : {}),
    });
    if (res.kind === 'taken') throw new UnrecoverableError(`run id ${runId} belongs to another tenant`);
    // (HTTP answers this 422): the job fails for good, its failedReason starting with the code, and the run it
    // names is left as it is — completing with {id} would tell the backend its request was applied
    if (res.kind === 'mismatch')
      throw new UnrecoverableError(
        `idempotency_mismatch: ${data.idempotencyKey !== undefined ? 'the idempotencyKey' : 'the runId'} names run ${res.runId}, made from a different request body; nothing was changed`,
      );
    if (res.kind === 'created' || res.kind === 'existing') return { id: res.runId };
    throw new Error(`unreachable: intake with failInvalid answers ${res.kind} with a run`);
  }
}

/** The run id of a `requests` job that names none: derived from the job id, so every delivery of the job agrees. */
export function runIdForJob(jobId: string): string {
  return `run_q${createHash('sha256').update(jobId).digest('base64url').slice(0, 24)}`;
}
