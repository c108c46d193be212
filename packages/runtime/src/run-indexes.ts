import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';
import { RUN_LAYOUT } from './run-state.js';

/** The deployment-wide indexes of runs the reconcilers work from (kept by the run scripts, lua/common.lua indexStatus). */
export class RunIndexes {
  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
  ) {}

  /** Live runs (queued, running, parked, resuming) and outbox entries not relayed yet: what a partition still owes. */
  async liveCount(): Promise<number> {
    const k = this.keys;
    const counts = await Promise.all([
      ...[k.queuedRuns, k.runningRuns, k.parkedRuns, k.resumingRuns].map((z) => this.redis.zcard(z)),
      ...[k.outbox, k.outboxTaken].map((l) => this.redis.llen(l)),
    ]);
    return counts.reduce((a, b) => a + b, 0);
  }

  /** Runs still queued that were created before `beforeMs` (their first job may never have been added). */
  async queuedSince(beforeMs: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.queuedRuns, '-inf', beforeMs, 'LIMIT', 0, limit);
  }

  /** Runs in status running since before `beforeMs`, after `(fromMs` (a sweep's cursor), oldest first, with their scores. */
  async runningSince(
    fromMs: number,
    beforeMs: number,
    limit: number,
  ): Promise<Array<{ runId: string; since: number }>> {
    const r = await this.redis.zrangebyscore(
      this.keys.runningRuns,
      Number.isFinite(fromMs) ? `(${fromMs}` : '-inf',
      beforeMs,
      'WITHSCORES',
      'LIMIT',
      0,
      limit,
    );
    const out: Array<{ runId: string; since: number }> = [];
    for (let i = 0; i + 1 < r.length; i += 2) out.push({ runId: r[i]!, since: Number(r[i + 1]) });
    return out;
  }

  /** Runs whose resume was flipped before `beforeMs` and has not started yet (for the reconciler). */
  async resumingSince(beforeMs: number, limit = 100): Promise<string[]> {
    return this.redis.zrangebyscore(this.keys.resumingRuns, '-inf', beforeMs, 'LIMIT', 0, limit);
  }

  /**
   * liveRunsOfOtherLayouts, at a process's start: once a scan found none, a marker key skips it at every later start
   * (this build and later ones create no run of another layout; the scan reads every live run).
   */
  async liveRunsOfOtherLayoutsAtStart(limit = 10): Promise<string[]> {
    const marker = this.keys.layoutChecked(RUN_LAYOUT);
    if (await this.redis.exists(marker)) return [];
    const found = await this.liveRunsOfOtherLayouts(limit);
    if (!found.length) await this.redis.set(marker, String(Date.now()));
    return found;
  }

  /**
   * Live runs (queued, running, parked or resuming) stored in a layout other than this build's (RUN_LAYOUT): runs of
   * a build before 2026-12-03 that this one cannot serve. Read at start (a page of 500 runs per round trip), up to
   * `limit` of them; a deployment with any does not start (docs/OPERATIONS.md: drain them with the earlier build).
   */
  async liveRunsOfOtherLayouts(limit = 10): Promise<string[]> {
    const found: string[] = [];
    for (const index of [this.keys.queuedRuns, this.keys.runningRuns, this.keys.parkedRuns, this.keys.resumingRuns]) {
      for (let from = 0; found.length < limit; from += PAGE) {
        const ids = await this.redis.zrange(index, String(from), String(from + PAGE - 1));
        if (!ids.length) break;
        const pipe = this.redis.pipeline();
        for (const id of ids) pipe.hmget(this.keys.run(id).state, 'status', 'lay');
        const rows = (await pipe.exec()) ?? [];
        rows.forEach(([, r], i) => {
          const [status, lay] = r as Array<string | null>;
          if (
            status &&
            !['completed', 'failed', 'cancelled'].includes(status) &&
            lay !== RUN_LAYOUT &&
            !found.includes(ids[i]!)
          )
            found.push(ids[i]!);
        });
      }
    }
    return found.slice(0, limit);
  }
}

const PAGE = 500;
