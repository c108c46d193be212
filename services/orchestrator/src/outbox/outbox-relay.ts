import type { Redis } from 'ioredis';
import type { ResultJob } from '@agentloop/protocol';
import {
  toSnapshot,
  type Logger,
  type QueueSet,
  type RunScheduler,
  type RunStore,
  type ThreadStore,
} from '@agentloop/runtime';
import { QUEUES } from '@agentloop/protocol';
import { publishDeliveryJob } from '../webhooks/delivery-jobs.js';

/** How long the relay's lease lasts; it is renewed at a third of it. */
const LEASE_MS = 5_000;
/** How long one blocking wait for an entry lasts (s): the lease is renewed between waits. */
const BLOCK_S = 1;

/**
 * Turns the outbox's entries (lua/common.lua toOutbox: written by the very step that makes the transition they report)
 * into jobs — a queue-intake run's `results` job (R), a thread's next run (E: ThreadStore) — in order. One process of the deployment relays at a time (a lease), so entries keep their order; it takes each entry
 * by moving it to a list of its own (BLMOVE: no polling while nothing happens) and drops it there once its job exists;
 * the next relay finishes what a crashed one had taken. Publishing is idempotent by job id: an entry relayed twice
 * makes one job.
 */
export class OutboxRelay {
  private running = false;
  private loop: Promise<void> | null = null;
  private readonly token = `${process.pid}-${Math.random().toString(36).slice(2)}`;
  private blocking: Redis | null = null;

  constructor(
    private readonly store: RunStore,
    private readonly queues: QueueSet,
    private readonly logger: Logger,
    private readonly threads: ThreadStore,
    private readonly scheduler: RunScheduler,
    /** How long a finished results job is kept (s): the job id stays taken, so a relay after a crash cannot repeat it. */
    private readonly keepS = 7 * 86_400,
    /** Where `results` is: the deployment's own prefix, one queue for every partition [queues]. */
    private readonly resultsQueues: QueueSet = queues,
  ) {}

  start(): void {
    this.running = true;
    this.blocking = this.store.redis.duplicate();
    this.loop = this.run();
  }

  async close(): Promise<void> {
    this.running = false;
    this.blocking?.disconnect();
    await this.loop;
    await this.release();
  }

  handBack(): void {}

  isRunning(): boolean {
    return this.running;
  }

  private get keys() {
    return this.store.keys;
  }

  private async run(): Promise<void> {
    while (this.running) {
      try {
        if (!(await this.lease())) {
          await new Promise((r) => setTimeout(r, LEASE_MS / 3).unref());
          continue;
        }
        // entries a crashed relay had taken come first
        for (const entry of await this.store.redis.lrange(this.keys.outboxTaken, 0, -1)) await this.relay(entry);
        const renewBy = Date.now() + LEASE_MS / 3;
        while (this.running && Date.now() < renewBy) {
          const entry = await this.blocking!.blmove(this.keys.outbox, this.keys.outboxTaken, 'LEFT', 'RIGHT', BLOCK_S);
          if (entry) await this.relay(entry);
        }
      } catch (err) {
        if (!this.running) return;
        this.logger.warn({ err }, 'outbox relay: retrying');
        await new Promise((r) => setTimeout(r, 500).unref());
      }
    }
  }

  /** Takes or renews the relay lease; false when another process holds it. */
  private async lease(): Promise<boolean> {
    const r = this.store.redis;
    if ((await r.set(this.keys.outboxLease, this.token, 'PX', LEASE_MS, 'NX')) === 'OK') return true;
    if ((await r.get(this.keys.outboxLease)) !== this.token) return false;
    await r.pexpire(this.keys.outboxLease, LEASE_MS);
    return true;
  }

  private async release(): Promise<void> {
    const r = this.store.redis;
    if (r.status === 'ready' && (await r.get(this.keys.outboxLease).catch(() => null)) === this.token)
      await r.del(this.keys.outboxLease).catch(() => 0);
  }

  private async relay(entry: string): Promise<void> {
    const [kind, runId, seq, type] = entry.split('|');
    if (kind === 'R' && runId) await this.publishResult(runId);
    else if (kind === 'E' && runId) await this.threadRunEnded(runId);
    else if (kind === 'W' && runId && seq && type) await this.publishWebhook(runId, Number(seq), type);
    else this.logger.warn({ entry }, 'outbox relay: unknown entry dropped');
    await this.store.redis.lrem(this.keys.outboxTaken, 1, entry);
  }

  /** A thread's run ended: its messages join the thread, and the run waiting behind it starts. */
  private async threadRunEnded(runId: string): Promise<void> {
    const next = await this.threads.runEnded(runId);
    if (next) await this.scheduler.start(next.runId, false, next.tenant); // in its tenant's line, like any new run
  }

  /** A webhook delivery: recorded in the run's delivery log, and the job that works the log off (one per run at a time). */
  private async publishWebhook(runId: string, seq: number, type: string): Promise<void> {
    const r = await this.store.webhooks.enqueue(runId, seq, type);
    if (r.kind === 'queued') await publishDeliveryJob(this.queues, runId, r.gen);
  }

  /** The `results` job of a queue-intake run that ended (job id = run id, SPEC §2). */
  private async publishResult(runId: string): Promise<void> {
    const st = await this.store.load(runId);
    if (!st) return; // expired before it was relayed: nothing left to report
    const snap = toSnapshot(st, { structured: !!st.request.output });
    const data: ResultJob = {
      runId,
      tenantId: st.tenant,
      status: snap.status,
      stopReason: snap.stopReason,
      output: snap.output,
      ...(st.request.output ? { outputJson: snap.outputJson ?? null } : {}),
      error: snap.status === 'failed' ? snap.error : null,
      usage: snap.usage,
      metadata: snap.metadata,
    };
    await this.resultsQueues
      .get(QUEUES.results)
      .add('result', data, { jobId: runId, removeOnComplete: { age: this.keepS }, removeOnFail: { age: this.keepS } });
  }
}
