import type { Redis } from 'ioredis';
import { wellFormedJson, type DeploymentKeys, type ToolOutcome } from '@agentloop/protocol';
import type { CallMeta, LocalResult, ToolCallData } from './run-store-types.js';
import type { RunScripts } from './run-scripts.js';
import type { CloseKind } from './closed-calls.js';
import { RESULT_CHUNK_BYTES, recordInChunks, type RecordAnswer } from './result-chunks.js';

/**
 * A run's calls: what is recorded about them — fields `c:<callId>` (meta), `…:st` (status), `…:out` (the full
 * outcome) and `…:dec` (a decision) of the run's state hash, as lua/common.lua (cf) writes them — and the steps that
 * record a call's start and its answer (each a script).
 */
export class RunCalls {
  constructor(
    private readonly redis: Redis,
    private readonly keys: DeploymentKeys,
    private readonly scripts: RunScripts,
  ) {}

  /**
   * Answers a call that must not run (cancelled, outcome_unknown, skipped, job_failed). `fence`: the delivery the
   * caller saw running it (`seen`; when another has taken it over since, nothing changes) and the caller (`by`, the
   * answered call's owner from here on). False when nothing was answered.
   */
  async closeToolCall(
    runId: string,
    callId: string,
    kind: Exclude<CloseKind, 'run_ended'>,
    fence?: { seen: string; by: string },
  ): Promise<boolean> {
    return (
      (await this.scripts.run('closeToolCall', runId, () => [callId, kind, fence?.seen ?? '', fence?.by ?? '']))
        .outcome === 'closed'
    );
  }

  /**
   * A tool-runner is about to execute a call: one step checks the call and the run and records the start under `owner`
   * (`jobId@token`) with its `running` event. 'first': run it; 'taken': taken over from `takeFrom`; `{owned}`: another
   * delivery started it (which one is stale, only the job's lock says); 'answered', or 'cancel' / 'expired'.
   */
  async markToolRunning(
    runId: string,
    callId: string,
    eventData: ToolCallData,
    owner: string,
    takeFrom = '',
  ): Promise<'first' | 'taken' | 'answered' | 'cancel' | 'expired' | { owned: string }> {
    const r = await this.scripts.run('markToolRunning', runId, (ev) => [
      callId,
      ev([{ type: 'tool.call', data: eventData }]),
      owner,
      takeFrom,
    ]);
    return r.outcome === 'owned' ? { owned: String(r.values[0] ?? '') } : r.outcome;
  }

  /**
   * Records an executed call's outcome once, by its owner (`owner`, as it recorded the start). `unstarted`: its `running`
   * event, for a call whose start was not recorded (read tools safe to retry): the step then makes the start's checks
   * too. Returns recorded, cancelled / skipped (answered so instead), stale (another delivery took the call over or
   * answered it while this one stalled: nothing written), or null (already answered).
   */
  async recordToolResult(
    runId: string,
    callId: string,
    outcome: ToolOutcome,
    eventData: ToolCallData,
    unstarted?: ToolCallData,
    owner = '',
  ): Promise<RecordAnswer> {
    return (await this.recordBatchedToolResult(runId, callId, outcome, eventData, unstarted, owner, [])).answer;
  }

  /**
   * recordToolResult for a call of a batch published without a flow parent (ToolJob.batch): `batchAnswered` says,
   * from the same step's read, whether the batch's `others` are all answered too once this one is recorded — null
   * when this one was not recorded (the caller reads the batch when it needs to know).
   */
  async recordBatchedToolResult(
    runId: string,
    callId: string,
    outcome: ToolOutcome,
    eventData: ToolCallData,
    unstarted: ToolCallData | undefined,
    owner: string,
    others: readonly string[],
  ): Promise<{ answer: RecordAnswer; batchAnswered: boolean | null }> {
    const r = await this.scripts.run('recordToolResult', runId, (ev) => [
      callId,
      wellFormedJson(outcome),
      ev([{ type: 'tool.call', data: eventData }]),
      unstarted ? ev([{ type: 'tool.call', data: unstarted }]) : '',
      owner,
      others.join(' '),
    ]);
    if (r.outcome === 'closed')
      return { answer: r.values[0] === 'skipped' ? 'skipped' : 'cancelled', batchAnswered: null };
    if (r.outcome === 'stale') return { answer: 'stale', batchAnswered: null };
    return r.outcome === 'recorded'
      ? { answer: 'recorded', batchAnswered: r.values[0] === '1' }
      : { answer: null, batchAnswered: null };
  }

  /** recordToolResult for a batch of local calls, in one step per `maxBytes` of results: see recordInChunks. */
  recordToolResults(runId: string, batch: LocalResult[], maxBytes = RESULT_CHUNK_BYTES): Promise<RecordAnswer[]> {
    return recordInChunks(this.scripts, runId, batch, maxBytes);
  }

  /** Everything recorded about one call: meta, status, full outcome (the uncapped result) and decision. */
  async record(
    runId: string,
    callId: string,
  ): Promise<{ meta: CallMeta; status: string; outcome: ToolOutcome | null; decision: string | null } | null> {
    const [meta, st, out, dec] = await this.fields(runId, [callId, `${callId}:st`, `${callId}:out`, `${callId}:dec`]);
    if (!meta) return null;
    return {
      meta: JSON.parse(meta) as CallMeta,
      status: st ?? 'queued',
      outcome: out ? (JSON.parse(out) as ToolOutcome) : null,
      decision: dec ?? null,
    };
  }

  /** Whether a call needs no execution: answered already, or unknown to the run (a stale job, or a run gone). */
  async answered(runId: string, callId: string): Promise<boolean> {
    const [st] = await this.fields(runId, [`${callId}:st`]);
    return st === null || st === undefined || st === 'done';
  }

  /** Whether every one of the calls needs no execution (answered, or unknown to the run), in one read. */
  async allAnswered(runId: string, callIds: readonly string[]): Promise<boolean> {
    return (
      await this.fields(
        runId,
        callIds.map((id) => `${id}:st`),
      )
    ).every((st) => st === null || st === undefined || st === 'done');
  }

  async meta(runId: string, callIds: readonly string[]): Promise<Array<CallMeta | null>> {
    return (await this.fields(runId, callIds)).map((r) => (r ? (JSON.parse(r) as CallMeta) : null));
  }

  /** Each call's meta and outcome, in one read (null meta: not a call of the run). */
  async metaAndOutcomes(
    runId: string,
    callIds: readonly string[],
  ): Promise<Array<{ meta: CallMeta | null; outcome: ToolOutcome | null }>> {
    const raw = await this.fields(runId, [...callIds, ...callIds.map((id) => `${id}:out`)]);
    return callIds.map((_, i) => {
      const [meta, out] = [raw[i], raw[callIds.length + i]];
      return {
        meta: meta ? (JSON.parse(meta) as CallMeta) : null,
        outcome: out ? (JSON.parse(out) as ToolOutcome) : null,
      };
    });
  }

  /** The decision recorded for each call ('approve', 'deny', 'submit_result'), or null while undecided. */
  async decisions(runId: string, callIds: readonly string[]): Promise<Array<string | null>> {
    return this.fields(
      runId,
      callIds.map((id) => `${id}:dec`),
    );
  }

  /** One HMGET of the state hash. */
  private async fields(runId: string, fields: readonly string[]): Promise<Array<string | null>> {
    if (!fields.length) return [];
    return this.redis.hmget(this.keys.run(runId).state, ...fields.map((f) => `c:${f}`));
  }
}
