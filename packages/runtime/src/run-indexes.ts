import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';

/** The deployment-wide indexes of runs the reconcilers work from (kept by the run scripts, lua/common.lua indexStatus). */
export class RunIndexes {
  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
  ) {}

  /** Runs still queued that were created before `beforeMs` (their first job may never have been added). */
  async queuedSince(beforeMs: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.queuedRuns, '-inf', beforeMs, 'LIMIT', 0, limit);
  }

  /** Runs in status running since before `beforeMs`, after `(fromMs` (a sweep's cursor), oldest first, with their scores. */
  async runningSince(fromMs: number, beforeMs: number, limit: number): Promise<Array<{ runId: string; since: number }>> {
    const r = await this.redis.zrangebyscore(this.keys.runningRuns, Number.isFinite(fromMs) ? `(${fromMs}` : '-inf', beforeMs, 'WITHSCORES', 'LIMIT', 0, limit);
    const out: Array<{ runId: string; since: number }> = [];
    for (let i = 0; i + 1 < r.length; i += 2) out.push({ runId: r[i]!, since: Number(r[i + 1]) });
    return out;
  }

  /** Runs whose resume was flipped before `beforeMs` and has not started yet (for the reconciler). */
  async resumingSince(beforeMs: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.resumingRuns, '-inf', beforeMs, 'LIMIT', 0, limit);
  }
}
