import type { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';

/*
  Drops the index entries of finished runs whose retention is over (their keys expire on their own).
  KEYS[1] retention zset (member <runId>|<tenant>, score = expiry ms)   ARGV[1] now ms   ARGV[2] at most this many
  ARGV[3] the deployment prefix (index names mirror DeploymentKeys.tenantRuns / tenantRunsByStatus)
  Returns how many runs were dropped.
*/
const SWEEP_LUA = `
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, m in ipairs(due) do
  local bar = string.find(m, '|', 1, true)
  local runId, tenant = string.sub(m, 1, bar - 1), string.sub(m, bar + 1)
  local base = ARGV[3] .. ':tenant:' .. tenant .. ':runs'
  redis.call('ZREM', base, runId)
  redis.call('ZREM', base .. ':completed', runId)
  redis.call('ZREM', base .. ':failed', runId)
  redis.call('ZREM', base .. ':cancelled', runId)
  redis.call('ZREM', KEYS[1], m)
end
return #due
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
    private readonly prefix: string,
  ) {
    this.keys = new DeploymentKeys(prefix);
    redis.defineCommand('al_retention_sweep', { numberOfKeys: 1, lua: SWEEP_LUA });
  }

  /** Sweeps everything due now (in batches); the number of runs dropped. */
  async sweep(now = Date.now(), batch = 500): Promise<number> {
    const run = (this.redis as unknown as { al_retention_sweep: (k: string, now: number, n: number, p: string) => Promise<number> }).al_retention_sweep;
    let total = 0;
    for (;;) {
      const n = Number(await run.call(this.redis, this.keys.retention, now, batch, this.prefix));
      total += n;
      if (n < batch) return total;
    }
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
