import type { Redis } from 'ioredis';
import type { DeploymentKeys, ToolOutcome } from '@agentloop/protocol';
import type { CallMeta } from './run-store-types.js';

/**
 * What is recorded about a run's calls, read: fields `c:<callId>` (meta), `…:st` (status), `…:out` (the full
 * outcome) and `…:dec` (a decision) of the run's state hash, as lua/common.lua (cf) writes them.
 */
export class RunCalls {
  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
  ) {}

  /** Everything recorded about one call: meta, status, full outcome (the uncapped result) and decision. */
  async record(runId: string, callId: string): Promise<{ meta: CallMeta; status: string; outcome: ToolOutcome | null; decision: string | null } | null> {
    const [meta, st, out, dec] = await this.fields(runId, [callId, `${callId}:st`, `${callId}:out`, `${callId}:dec`]);
    if (!meta) return null;
    return { meta: JSON.parse(meta) as CallMeta, status: st ?? 'queued', outcome: out ? (JSON.parse(out) as ToolOutcome) : null, decision: dec ?? null };
  }

  /** Whether a call needs no execution: answered already, or unknown to the run (a stale job, or a run gone). */
  async answered(runId: string, callId: string): Promise<boolean> {
    const [st] = await this.fields(runId, [`${callId}:st`]);
    return st === null || st === undefined || st === 'done';
  }

  /** Whether every one of the calls needs no execution (answered, or unknown to the run), in one read. */
  async allAnswered(runId: string, callIds: readonly string[]): Promise<boolean> {
    return (await this.fields(runId, callIds.map((id) => `${id}:st`))).every((st) => st === null || st === undefined || st === 'done');
  }

  async meta(runId: string, callIds: readonly string[]): Promise<Array<CallMeta | null>> {
    return (await this.fields(runId, callIds)).map((r) => (r ? (JSON.parse(r) as CallMeta) : null));
  }

  /** Each call's meta and outcome, in one read (null meta: not a call of the run). */
  async metaAndOutcomes(runId: string, callIds: readonly string[]): Promise<Array<{ meta: CallMeta | null; outcome: ToolOutcome | null }>> {
    const raw = await this.fields(runId, [...callIds, ...callIds.map((id) => `${id}:out`)]);
    return callIds.map((_, i) => {
      const [meta, out] = [raw[i], raw[callIds.length + i]];
      return { meta: meta ? (JSON.parse(meta) as CallMeta) : null, outcome: out ? (JSON.parse(out) as ToolOutcome) : null };
    });
  }

  /** The decision recorded for each call ('approve', 'deny', 'submit_result'), or null while undecided. */
  async decisions(runId: string, callIds: readonly string[]): Promise<Array<string | null>> {
    return this.fields(runId, callIds.map((id) => `${id}:dec`));
  }

  /** One HMGET of the state hash. */
  private async fields(runId: string, fields: readonly string[]): Promise<Array<string | null>> {
    if (!fields.length) return [];
    return this.redis.hmget(this.keys.run(runId).state, ...fields.map((f) => `c:${f}`));
  }
}
