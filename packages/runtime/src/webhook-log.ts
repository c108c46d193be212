import type { Redis } from 'ioredis';
import {
  WebhookRecordSchema,
  webhookId,
  wellFormedJson,
  type DeploymentKeys,
  type WebhookDelivery,
  type WebhookRecord,
} from '@agentloop/protocol';
import type { ScriptName, ScriptResult } from './scripts.js';

/** Runs a webhook script of `runId` with its own arguments (RunStore adds the head arguments and the run's keys). */
export type WebhookScriptRunner = <N extends ScriptName>(
  name: N,
  runId: string,
  args: Array<string | number>,
) => Promise<ScriptResult<N>>;

export type DueDelivery = {
  kind: 'due';
  index: number;
  record: WebhookRecord;
  /** as stored: the compare-and-set of its attempt */ raw: string;
  body: string | null;
};

const parseRecord = (raw: string): WebhookRecord => WebhookRecordSchema.parse(JSON.parse(raw));

/**
 * A run's webhook delivery log (`P:run:{id}:webhooks`, lua/enqueueWebhook-10.lua lists its fields): its deliveries in
 * event order, worked off one at a time by one delivery job per run, whose generation the log names. Every write is a
 * script that checks the log first, so a late write never recreates an expired log.
 */
export class WebhookLog {
  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
    private readonly run: WebhookScriptRunner,
  ) {}

  /**
   * Records the delivery of event `seq` (null: none, only the job) — once however often it is asked — and names the
   * generation whose delivery job must exist. `failedGen`: a generation whose job failed for good (it no longer owns the log).
   */
  async enqueue(
    runId: string,
    seq: number | null,
    type: string,
    failedGen?: number,
  ): Promise<{ kind: 'queued'; gen: number } | { kind: 'idle' | 'gone' }> {
    const record: WebhookRecord = {
      seq: seq ?? 1,
      type,
      status: 'pending',
      attempts: 0,
      lastStatusCode: null,
      nextAttemptAt: null,
      firstAttemptAt: null,
    };
    const r = await this.run('enqueueWebhook', runId, [seq ?? '', wellFormedJson(record), failedGen ?? '']);
    return r.outcome === 'queued' ? { kind: 'queued', gen: Number(r.values[0]) } : { kind: r.outcome };
  }

  /** The delivery generation `gen` works on next (the oldest one not finished). */
  async next(runId: string, gen: number): Promise<DueDelivery | { kind: 'idle' | 'stale' | 'gone' }> {
    const r = await this.run('nextWebhook', runId, [gen]);
    if (r.outcome !== 'due') return { kind: r.outcome };
    const [index, raw, body] = r.values.map(String) as [string, string, string];
    return { kind: 'due', index: Number(index), record: parseRecord(raw), raw, body: body === '' ? null : body };
  }

  /** Keeps a delivery's body for every attempt; the body kept (an earlier one wins), or null when the job lost the log. */
  async saveBody(runId: string, gen: number, index: number, body: string): Promise<string | null> {
    const r = await this.run('saveWebhookBody', runId, [gen, index, body]);
    return r.outcome === 'saved' ? String(r.values[0]) : null;
  }

  /** Records an attempt over the record `due` read; `finished`: delivered or given up. False when nothing was written. */
  async recordAttempt(
    runId: string,
    gen: number,
    due: DueDelivery,
    next: WebhookRecord,
    finished: boolean,
  ): Promise<boolean> {
    const r = await this.run('recordWebhookAttempt', runId, [
      gen,
      due.index,
      due.raw,
      wellFormedJson(next),
      finished ? '1' : '0',
    ]);
    return r.outcome === 'recorded';
  }

  /** The run's deliveries, oldest first, as `GET /v1/runs/:id/webhooks` shows them. */
  async list(runId: string): Promise<WebhookDelivery[]> {
    const key = this.keys.run(runId).webhooks;
    const n = Number(await this.redis.hget(key, 'n')) || 0;
    if (!n) return [];
    const raws = await this.redis.hmget(key, ...Array.from({ length: n }, (_, i) => String(i + 1)));
    return raws.flatMap((raw) => {
      if (raw === null) return [];
      const r = parseRecord(raw);
      return [
        {
          webhookId: webhookId(runId, r.seq),
          type: r.type,
          status: r.status,
          attempts: r.attempts,
          lastStatusCode: r.lastStatusCode,
          nextAttemptAt: r.nextAttemptAt === null ? null : new Date(r.nextAttemptAt).toISOString(),
        },
      ];
    });
  }
}
