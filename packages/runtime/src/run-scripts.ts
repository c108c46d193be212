import type { Redis } from 'ioredis';
import type { DeploymentKeys, NewEvent } from '@agentloop/protocol';
import { Scripts, type ScriptName, type ScriptResult } from './scripts.js';
import { eventLines } from './event-lines.js';
import { RunRefsCache } from './run-refs.js';

/** Builds a script's events (`ev`): whole envelopes, stamped with the same time as the script's head arguments. */
export type EventArg = (events: readonly NewEvent[]) => string;
/** The scripts that may change a run's status: they take the status keys too (DeploymentKeys.runStatusScript). */
export type StatusScript = 'startIteration' | 'checkpointResponse' | 'endRun' | 'requestCancel' | 'applyDecisions';

/** RunStore's way to its scripts: each with the keys the key space names for it and the head arguments. */
export class RunScripts {
  /** The tenant and idempotency key of runs, for their status keys. */
  readonly refs: RunRefsCache;
  private readonly scripts: Scripts;

  constructor(
    redis: Redis,
    private readonly keys: DeploymentKeys,
  ) {
    this.scripts = new Scripts(redis);
    this.refs = new RunRefsCache(redis, keys);
  }

  /**
   * A run script: its keys (DeploymentKeys.runScript, unless given), the head arguments every one takes (run id, now,
   * its events channel, the tenant its status keys name or ''), then its own.
   */
  run<N extends ScriptName>(
    name: N,
    runId: string,
    args: (ev: EventArg) => Array<string | number>,
    keys = this.keys.runScript(runId),
    tenant = '',
  ): Promise<ScriptResult<N>> {
    const now = Date.now();
    const at = new Date(now).toISOString();
    const ev: EventArg = (events) => eventLines(runId, at, events);
    return this.scripts.run(name, keys, [
      runId,
      at,
      String(now),
      this.keys.run(runId).eventsChannel,
      tenant,
      ...args(ev),
    ]);
  }

  /** A script that may change the run's status, with its tenant's indexes and its idempotency key in KEYS. */
  async statusRun<N extends StatusScript>(
    name: N,
    runId: string,
    args: (ev: EventArg) => Array<string | number>,
  ): Promise<ScriptResult<N>> {
    for (let fresh = false; ; fresh = true) {
      const r = await this.refs.of(runId, fresh);
      try {
        return await this.run(name, runId, args, this.keys.runStatusScript(runId, r.tenant, r.idem), r.tenant);
      } catch (e) {
        // the refs kept were another run's of the same id (reused after retention): nothing was written; read again
        if (fresh || !String((e as Error).message).includes('KEYS_STALE')) throw e;
      }
    }
  }
}
