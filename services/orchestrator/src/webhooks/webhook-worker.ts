import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES, WebhookJobSchema, webhookId } from '@agentloop/protocol';
import {
  HandedBackError,
  workerOptions,
  workerTakingJobs,
  type DueDelivery,
  type Logger,
  type Metrics,
  type QueueSet,
  type RunStore,
} from '@agentloop/runtime';
import { afterAttempt, type Refusal } from './delivery-schedule.js';
import { publishDeliveryJob } from './delivery-jobs.js';
import { webhookBody } from './webhook-body.js';
import type { WebhookPolicy } from './webhook-policy.js';
import { sendWebhook, type AttemptResult } from './webhook-sender.js';

export interface WebhookWorkerOptions {
  redis: Redis;
  prefix: string;
  store: RunStore;
  queues: QueueSet;
  policy: WebhookPolicy;
  metrics: Metrics;
  logger: Logger;
  lockMs: number;
  /** Delivery jobs (runs) served at once: each waits on a receiver, not on this process. */
  concurrency?: number;
}

type Run = { runId: string; gen: number; tenant: string; url: string };

/**
 * Delivers a run's webhooks (SPEC §2): a `deliver` job works off its run's delivery log, oldest first, one delivery at
 * a time — the next waits until the previous is answered 2xx or given up. Between attempts the job waits in BullMQ's
 * delayed set (no worker is held). A process that dies mid-attempt leaves the job to BullMQ's stall handling: the
 * attempt is made again, with the same webhook-id and body (at least once).
 */
export class WebhookWorker {
  private worker: Worker | null = null;
  private closing = false;
  private readonly inFlight = new AbortController();

  constructor(private readonly o: WebhookWorkerOptions) {}

  async start(): Promise<void> {
    this.worker = new Worker(QUEUES.webhooks, (job, token) => this.process(job, token), {
      connection: this.o.redis.duplicate(),
      prefix: this.o.prefix,
      concurrency: this.o.concurrency ?? 50,
      ...workerOptions(this.o.lockMs),
    });
    this.worker.on('error', (err) => this.o.logger.error({ err }, 'webhook worker error'));
    this.worker.on('failed', (job, err) => void this.failed(job, err));
    await this.worker.waitUntilReady();
  }

  handBack(): void {
    this.inFlight.abort();
  }

  isRunning(): boolean {
    return workerTakingJobs(this.worker);
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.worker?.close();
  }

  private async process(job: Job, token?: string): Promise<string> {
    const parsed = WebhookJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`malformed webhook job: ${parsed.error.message}`);
    const { runId, gen } = parsed.data;
    const fields = await this.o.store.fieldsOf(runId, ['tenant', 'whUrl']);
    if (!fields?.tenant || !fields.whUrl) return 'gone';
    const run: Run = { runId, gen, tenant: fields.tenant, url: fields.whUrl };
    for (;;) {
      const due = await this.o.store.webhooks.next(runId, gen);
      if (due.kind !== 'due') return due.kind;
      const wait = due.record.nextAttemptAt !== null && due.record.nextAttemptAt > Date.now();
      // shutting down: the job goes back to be taken by another process at once
      if ((wait || this.closing) && token) {
        await job.moveToDelayed(wait ? due.record.nextAttemptAt! : Date.now(), token);
        throw new DelayedError();
      }
      await this.attempt(run, due);
    }
  }

  /** One attempt of the run's oldest pending delivery, recorded (a job that lost the log records nothing). */
  private async attempt(run: Run, due: DueDelivery): Promise<void> {
    const result = await this.send(run, due);
    if (this.inFlight.signal.aborted) throw new HandedBackError();
    const next = afterAttempt(due.record, result, Date.now(), this.o.policy.settings.retryBaseMs);
    if (!(await this.o.store.webhooks.recordAttempt(run.runId, run.gen, due, next.record, next.finished))) return;
    this.o.metrics.webhookDeliveries.inc({ outcome: next.outcome });
    if (next.outcome === 'delivered') return;
    const fields = {
      runId: run.runId,
      webhookId: webhookId(run.runId, due.record.seq),
      attempts: next.record.attempts,
      result,
    };
    if (next.outcome === 'failed') this.o.logger.warn(fields, 'webhook given up');
    else
      this.o.logger.info(
        { ...fields, nextAttemptAt: new Date(next.record.nextAttemptAt!).toISOString() },
        'webhook attempt failed: retrying',
      );
  }

  private async send(run: Run, due: DueDelivery): Promise<AttemptResult | Refusal> {
    const secret = this.o.policy.secretOf(run.tenant);
    if (!secret)
      return {
        kind: 'refused',
        message: `tenant ${run.tenant} has no webhook signing secret any more (AGENTLOOP_WEBHOOK_SECRETS)`,
      };
    const body = due.body ?? (await this.firstBody(run, due));
    if (body === null) return { kind: 'refused', message: 'the event to deliver is gone' };
    // checked again at every attempt: the name may resolve elsewhere now, or the operator's allowance be gone
    const target = await this.o.policy.target(run.url);
    // a name that does not resolve now (a DNS hiccup) is retried like a receiver that did not answer; a refused address is not
    if (!target.ok)
      return target.transient
        ? { kind: 'no_answer', message: target.message }
        : { kind: 'refused', message: target.message };
    return sendWebhook({
      url: target.url,
      target: target.target,
      id: webhookId(run.runId, due.record.seq),
      body,
      secret,
      timeoutMs: this.o.policy.settings.timeoutMs,
      signal: this.inFlight.signal,
    });
  }

  /** The body built for the first attempt and kept (another delivery of this job may have kept one first). */
  private async firstBody(run: Run, due: DueDelivery): Promise<string | null> {
    const built = await webhookBody(this.o.store, run.runId, due.record.seq);
    return built === null ? null : this.o.store.webhooks.saveBody(run.runId, run.gen, due.index, built);
  }

  /** A job that failed for good (Redis away through all its attempts) hands its run's log to a new generation. */
  private async failed(job: Job | undefined, err: Error): Promise<void> {
    const parsed = WebhookJobSchema.safeParse(job?.data);
    if (!job || !parsed.success || job.attemptsMade < (job.opts.attempts ?? 1)) return;
    this.o.logger.error(
      { err, runId: parsed.data.runId },
      'webhook delivery job failed for good: a new one takes its run over',
    );
    try {
      const r = await this.o.store.webhooks.enqueue(parsed.data.runId, null, '', parsed.data.gen);
      if (r.kind === 'queued') await publishDeliveryJob(this.o.queues, parsed.data.runId, r.gen);
    } catch (e) {
      this.o.logger.error(
        { err: e, runId: parsed.data.runId },
        "webhook delivery job could not be replaced: the run's next event starts one",
      );
    }
  }
}
