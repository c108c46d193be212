import type { Redis } from 'ioredis';
import { DeploymentKeys, TERMINAL_STATUSES } from '@agentloop/protocol';

/*
  Drops the index entries of finished runs whose retention is over (their keys expire on their own). Every key it
  touches is declared (Redis Cluster's rule, SPEC §1): KEYS[1] the retention zset (member <runId>|<tenant>, score =
  expiry ms), then for each member ARGV[i+1] its tenant's run index and its indexes per terminal status
  (TERMINAL_STATUSES order), built by DeploymentKeys. ARGV[1] now ms. A member is dropped only if it is still due
  (another sweeper, or a run finished again under the same id, may have moved it since it was read).
  Returns how many runs were dropped.
*/
const PER_MEMBER = 1 + TERMINAL_STATUSES.length;
const SWEEP_LUA = `
local per, n = ${PER_MEMBER}, 0
for i = 2, #ARGV do
  local m = ARGV[i]
  local score = redis.call('ZSCORE', KEYS[1], m)
  if score and tonumber(score) <= tonumber(ARGV[1]) then
    local bar = string.find(m, '|', 1, true)
    if bar then
      local runId = string.sub(m, 1, bar - 1)
      for j = 1, per do redis.call('ZREM', KEYS[1 + (i - 2) * per + j], runId) end
    end
    redis.call('ZREM', KEYS[1], m)
    n = n + 1
  end
end
return n
`;

/**
 * Retention (AGENTLOOP_RUN_RETENTION_S): a finished run's keys carry a TTL set when it finished; this removes its
 * entries from the tenant's indexes once that TTL has passed. Any number of api processes may sweep at once.
 */
export class RetentionSweeper {
  private readonly keys: DeploymentKeys;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    prefix: string,
  ) {
    this.keys = new DeploymentKeys(prefix);
    redis.defineCommand('al_retention_sweep', { lua: SWEEP_LUA }); // numkeys passed per call
  }

  /** Sweeps everything due now (in batches); the number of runs dropped. */
  async sweep(now = Date.now(), batch = 500): Promise<number> {
    const run = (this.redis as unknown as { al_retention_sweep: (...args: Array<string | number>) => Promise<number> })
      .al_retention_sweep;
    let total = 0;
    for (;;) {
      const due = await this.redis.zrangebyscore(this.keys.retention, '-inf', now, 'LIMIT', 0, batch);
      if (!due.length) return total;
      const keys = [this.keys.retention, ...due.flatMap((m) => this.indexesOf(m.slice(m.indexOf('|') + 1)))];
      total += Number(await run.call(this.redis, keys.length, ...keys, now, ...due));
      if (due.length < batch) return total;
    }
  }

  /** A tenant's run index and its indexes per terminal status: where a finished run is listed. */
  private indexesOf(tenant: string): string[] {
    return [this.keys.tenantRuns(tenant), ...TERMINAL_STATUSES.map((s) => this.keys.tenantRunsByStatus(tenant, s))];
  }

  /** Sweeps every `everyMs` until stop(); errors (Redis away) are left for the next round. */
  start(everyMs: number, onError: (err: unknown) => void): void {
    this.timer = setInterval(() => void this.sweep().catch(onError), everyMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}
