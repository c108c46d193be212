import type { Redis } from 'ioredis';
import { wellFormedJson, type DeploymentKeys, type Message, type ThreadResponse } from '@agentloop/protocol';
import { Scripts } from './scripts.js';

/**
 * Threads (SPEC §2): the conversation a tenant's runs continue, one run at a time. The one-active-run rule is decided
 * by createRun (atomically with the creation); this class carries out what follows a thread run's end — reported by
 * the outbox ('E|<runId>') — in steps that each touch one slot and are each idempotent: the run's own messages join
 * the thread and the next waiting run becomes active (endThreadRun, on the thread's keys), then that run's transcript
 * is composed and it becomes startable (startThreadRun, on the run's keys). The caller then publishes its first job.
 */
export class ThreadStore {
  private readonly scripts: Scripts;

  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
    /** How long a thread lives after its last run's end (s): the runs' retention. */
    private readonly retentionS: number,
  ) {
    this.scripts = new Scripts(redis);
  }

  private head(runId: string): Array<string | number> {
    const now = Date.now();
    return [runId, new Date(now).toISOString(), String(now), this.keys.run(runId).eventsChannel, ''];
  }

  /** A tenant's thread, or null when it has no run of this tenant (another tenant's thread id is another thread). */
  async get(tenant: string, threadId: string): Promise<ThreadResponse | null> {
    const t = this.keys.thread(tenant, threadId);
    const [runs, msgs] = await Promise.all([this.redis.lrange(t.runs, 0, -1), this.redis.lrange(t.messages, 0, -1)]);
    if (!runs.length) return null;
    return { id: threadId, runs, messages: msgs.map((m) => JSON.parse(m) as Message) };
  }

  /**
   * A thread's run ended: its messages join the thread, and the run now active on the thread — the next that waited,
   * or one a crashed relay left waiting — is made startable. Returns the run to start (publish its first job) and its
   * tenant (a thread's runs are one tenant's), or null.
   */
  async runEnded(runId: string): Promise<{ runId: string; tenant: string } | null> {
    const k = this.keys.run(runId);
    const [tenant, threadId, from] = await this.redis.hmget(k.state, 'tenant', 'threadId', 'thrFrom');
    if (!tenant || !threadId) return null;
    const t = this.keys.thread(tenant, threadId);
    const own =
      from === null
        ? []
        : (await this.redis.lrange(k.messages, Number(from), -1)).filter(
            (m) => (JSON.parse(m) as Message).role !== 'system',
          );
    const r = await this.scripts.run(
      'endThreadRun',
      [t.hash, t.runs, t.messages, t.waiting],
      [...this.head(runId), wellFormedJson(own), this.retentionS],
    );
    if (r.outcome !== 'next') return null;
    const next = String(r.values[0]);
    const conversation = await this.redis.lrange(t.messages, 0, -1);
    const nk = this.keys.run(next);
    const started = await this.scripts.run('startThreadRun', this.keys.runScript(next), [
      ...this.head(next),
      wellFormedJson(conversation),
    ]);
    // (stale: it started before — its first job may still be missing after a crash, and publishing it again is harmless)
    return started.outcome === 'started' || (await this.redis.hget(nk.state, 'status')) === 'queued'
      ? { runId: next, tenant }
      : null;
  }
}
