import type { WebhookRecord } from '@agentloop/protocol';
import type { AttemptResult } from './webhook-sender.js';

/** Retries go on for at least this long after a delivery's first attempt (SPEC §2: at least 24 h). */
export const RETRY_FOR_MS = 24 * 3_600_000;
/** The longest wait between two attempts: doubling stops here, so a receiver that comes back is reached within an hour. */
export const MAX_RETRY_DELAY_MS = 3_600_000;

/** Why an attempt was not made, and never will be (the delivery is given up at once). */
export type Refusal = { kind: 'refused'; message: string };

export interface AfterAttempt {
  record: WebhookRecord;
  /** Delivered or given up: the next delivery of the run may go. */
  finished: boolean;
  /** agentloop_webhook_deliveries_total{outcome}. */
  outcome: 'delivered' | 'retried' | 'failed';
}

/**
 * The delivery after an attempt at `now` (pure): a 2xx delivers it; any other answer, or none, is retried after
 * `baseMs`, doubling with each attempt (capped at MAX_RETRY_DELAY_MS), until an attempt fails RETRY_FOR_MS or more
 * after the first one; a refusal gives it up at once.
 */
export function afterAttempt(
  r: WebhookRecord,
  result: AttemptResult | Refusal,
  now: number,
  baseMs: number,
): AfterAttempt {
  const attempts = r.attempts + 1;
  const firstAttemptAt = r.firstAttemptAt ?? now;
  const lastStatusCode = result.kind === 'answered' ? result.status : null;
  const done = (status: 'delivered' | 'failed'): AfterAttempt => ({
    record: { ...r, status, attempts, lastStatusCode, nextAttemptAt: null, firstAttemptAt },
    finished: true,
    outcome: status,
  });
  if (result.kind === 'answered' && result.status >= 200 && result.status < 300) return done('delivered');
  if (result.kind === 'refused' || now - firstAttemptAt >= RETRY_FOR_MS) return done('failed');
  const delay = Math.min(baseMs * 2 ** (attempts - 1), MAX_RETRY_DELAY_MS);
  return {
    record: { ...r, attempts, lastStatusCode, nextAttemptAt: now + delay, firstAttemptAt },
    finished: false,
    outcome: 'retried',
  };
}
