import type { Redis } from 'ioredis';
import type { Logger } from '@agentloop/runtime';

/** How long a read of the primary's connected replicas is reused (one `INFO replication` per second at most). */
const REPLICAS_MAX_AGE_MS = 1000;

/**
 * The start of a `retry: "never"` call, acknowledged by a replica before the call executes (behind Sentinel). A start
 * only the primary has may be lost in a failover (replication is asynchronous), and a redelivery would then find the
 * call unstarted and execute it again. It waits for as many replicas as are connected, up to the configured number:
 * with none connected there is no replica a failover could promote without this write (one that connects later
 * resyncs from this primary first), and waiting would only answer every such call outcome_unknown after a second of
 * a blocked connection — the state of a deployment right after a failover took its only replica.
 */
export class ReplicaAck {
  private read: { at: number; replicas: Promise<number> } | null = null;
  private alone = false;

  constructor(
    private readonly redis: Redis,
    private readonly o: { replicas: number; timeoutMs: number },
    private readonly logger: Logger,
  ) {}

  /** Resolves once the start just written on `redis` reached the replicas; throws when it did not (the job retries). */
  async afterStart(runId: string, callId: string): Promise<void> {
    const need = Math.min(this.o.replicas, await this.connectedReplicas());
    if (need === 0) {
      if (!this.alone)
        this.logger.warn(
          'the Redis primary has no replica connected: retry:"never" starts are not acknowledged by one until a replica is back',
        );
      this.alone = true;
      return;
    }
    this.alone = false;
    // WAIT counts the writes of this connection before it: the start just made on it included
    const acked = Number(await this.redis.call('WAIT', need, this.o.timeoutMs));
    if (acked < need)
      throw new Error(
        `the start of call ${callId} of run ${runId} reached ${acked} of ${need} replicas within ${this.o.timeoutMs} ms: not executed, retried`,
      );
  }

  private connectedReplicas(): Promise<number> {
    const now = Date.now();
    if (this.read && now - this.read.at < REPLICAS_MAX_AGE_MS) return this.read.replicas;
    // online ones: a replica still in its first sync gets the write with it, and no failover promotes it before
    const replicas = this.redis
      .info('replication')
      .then((info) => (info.match(/^slave\d+:.*state=online/gm) ?? []).length);
    this.read = { at: now, replicas };
    replicas.catch(() => this.read?.replicas === replicas && (this.read = null)); // a failed read is not remembered
    return replicas;
  }
}
