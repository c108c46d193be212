import { describe, expect, it } from 'vitest';
import type { WebhookRecord } from '@agentloop/protocol';
import { MAX_RETRY_DELAY_MS, RETRY_FOR_MS, afterAttempt } from './delivery-schedule.js';

const fresh: WebhookRecord = {
  seq: 7,
  type: 'run.completed',
  status: 'pending',
  attempts: 0,
  lastStatusCode: null,
  nextAttemptAt: null,
  firstAttemptAt: null,
};
const t0 = 1_700_000_000_000;

describe('a delivery after an attempt', () => {
  it('a 2xx delivers it; its first attempt is remembered', () => {
    expect(afterAttempt(fresh, { kind: 'answered', status: 204 }, t0, 5000)).toEqual({
      record: {
        ...fresh,
        status: 'delivered',
        attempts: 1,
        lastStatusCode: 204,
        nextAttemptAt: null,
        firstAttemptAt: t0,
      },
      finished: true,
      outcome: 'delivered',
    });
  });

  it('any other answer, or none, is retried after the base delay, doubling with each attempt up to an hour', () => {
    let r = fresh;
    const delays: number[] = [];
    for (let i = 0; i < 14; i++) {
      const now = r.nextAttemptAt ?? t0;
      const next = afterAttempt(
        r,
        i % 3 === 2 ? { kind: 'no_answer', message: 'timeout' } : { kind: 'answered', status: i % 2 ? 302 : 500 },
        now,
        5000,
      );
      expect(next).toMatchObject({
        finished: false,
        outcome: 'retried',
        record: { status: 'pending', attempts: i + 1, firstAttemptAt: t0 },
      });
      expect(next.record.lastStatusCode).toBe(i % 3 === 2 ? null : i % 2 ? 302 : 500);
      delays.push(next.record.nextAttemptAt! - now);
      r = next.record;
    }
    expect(delays.slice(0, 5)).toEqual([5000, 10_000, 20_000, 40_000, 80_000]);
    expect(delays.slice(-3)).toEqual([MAX_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS, MAX_RETRY_DELAY_MS]);
  });

  it('retries for 24 h after the first attempt, then gives up; a refusal gives up at once', () => {
    const retrying = { ...fresh, attempts: 30, firstAttemptAt: t0, nextAttemptAt: t0 + RETRY_FOR_MS - 1 };
    expect(afterAttempt(retrying, { kind: 'answered', status: 503 }, t0 + RETRY_FOR_MS - 1, 5000).outcome).toBe(
      'retried',
    );
    expect(afterAttempt(retrying, { kind: 'answered', status: 503 }, t0 + RETRY_FOR_MS, 5000)).toMatchObject({
      finished: true,
      outcome: 'failed',
      record: { status: 'failed', attempts: 31, lastStatusCode: 503, nextAttemptAt: null },
    });
    expect(afterAttempt(fresh, { kind: 'refused', message: 'private address' }, t0, 5000)).toMatchObject({
      finished: true,
      outcome: 'failed',
      record: { status: 'failed', attempts: 1, lastStatusCode: null },
    });
  });
});
