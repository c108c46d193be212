import { QUEUES, webhookJobId, type WebhookJob } from '@agentloop/protocol';
import type { QueueSet } from '@agentloop/runtime';

/**
 * Attempts of a delivery job before it fails for good. Its deliveries' own failures are retried by the job itself
 * (delayed, AGENTLOOP_WEBHOOK_RETRY_BASE_MS); these are for Redis being away, backing off from 1 s to days.
 */
const JOB_ATTEMPTS = 20;

/**
 * Adds generation `gen` of run `runId`'s delivery job (its id names it: adding it again is harmless). A job that fails
 * for good is not kept: the same generation can then be added again by the next entry relayed for its run.
 */
export async function publishDeliveryJob(queues: QueueSet, runId: string, gen: number): Promise<void> {
  const data: WebhookJob = { runId, gen };
  await queues.get(QUEUES.webhooks).add('deliver', data, {
    jobId: webhookJobId(runId, gen),
    attempts: JOB_ATTEMPTS,
    backoff: { type: 'exponential', delay: 1000 },
    removeOnFail: true,
  });
}
