import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';

/** What names a run's status keys (DeploymentKeys.runStatusScript): its tenant and its idempotency key ('' = none). */
export interface RunRefs {
  tenant: string;
  idem: string;
}

/** Runs whose refs a process keeps (a run's steps mostly run in the process that created or loaded it). */
const KEPT = 4096;

/**
 * The tenant and idempotency key of runs, as their scripts' KEYS need them (a status change moves the run between its
 * tenant's indexes, and a finished run's idempotency key expires with it). Neither changes during a run, so they are
 * kept from its creation or a read of its state; a miss costs one HMGET. A stale entry (a run id reused after
 * retention) is refused by the script before any write (KEYS_STALE), read again, and the step retried once.
 */
export class RunRefsCache {
  private readonly refs = new Map<string, RunRefs>();

  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
  ) {}

  remember(runId: string, refs: RunRefs): void {
    if (runId.length > 64) return; // an id from a request path may be anything: the map stays small
    if (!this.refs.has(runId) && this.refs.size >= KEPT) this.refs.clear();
    this.refs.set(runId, refs);
  }

  /** The run's refs, read from its state on a miss (or when `fresh`); a run that does not exist has none ('', ''). */
  async of(runId: string, fresh = false): Promise<RunRefs> {
    const kept = fresh ? undefined : this.refs.get(runId);
    if (kept) return kept;
    const [tenant, idem] = await this.redis.hmget(this.keys.run(runId).state, 'tenant', 'idem');
    const refs = { tenant: tenant ?? '', idem: idem ?? '' };
    if (tenant) this.remember(runId, refs);
    return refs;
  }
}
