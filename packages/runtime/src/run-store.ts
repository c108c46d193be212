import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  DeploymentKeys, runPlaceholder, wellFormedJson, type ErrorInfo, type EventEnvelope, type Message, type NewEvent, type RunSnapshot, type StopReason, type ToolOutcome, type Usage,
} from '@agentloop/protocol';
import { RunScripts } from './run-scripts.js';
import type { CloseKind } from './closed-calls.js';
import { decisionOutcome } from './decision-outcome.js';
import { editedBatchMessage } from './batch-edit.js';
import { STATE_FIELDS, parseRunState, stateHash, type RunState } from './run-state.js';
import { checkpointIncrements, checkpointTarget, checkpointUpdates } from './checkpoint-updates.js';
import { listRuns } from './run-listing.js';
import { createRunArgs } from './create-run-args.js';
import { RunCalls } from './run-calls.js';
import { RunIndexes } from './run-indexes.js';
import { WebhookLog } from './webhook-log.js';
import { RESULT_CHUNK_BYTES, recordInChunks, type RecordAnswer } from './result-chunks.js';
import { startIteration, type StartParams, type Started } from './iteration-start.js';
import { endSegment, type SegmentEnd } from './tracing/segment-spans.js';
import { DEFAULT_RETENTION_S, type CheckpointInput, type CreateRunInput, type CreateRunResult, type DecisionOutcome, type ListCursor, type LocalResult, type PreparedDecision, type ToolCallData } from './run-store-types.js';

export * from './run-store-types.js';
export const IDEMPOTENCY_TTL_S = 86_400;

/**
 * Run state in Redis. Every state change is one Lua script (compare-and-set on iteration/phase) that also
 * appends the events it implies; reads are plain commands, but for the events (a script reads a page of them).
 */
export class RunStore {
  readonly keys: DeploymentKeys;
  /** What is recorded about a run's calls (reads; every write is a script here). */
  readonly calls: RunCalls;
  /** The deployment's work lists of runs (for the reconcilers). */
  readonly indexes: RunIndexes;
  /** Runs with notify: their webhook deliveries. */
  readonly webhooks: WebhookLog;
  private readonly scripts: RunScripts;

  constructor(
    readonly redis: Redis,
    readonly prefix: string,
    /** How long a finished run's keys live (seconds). */
    readonly retentionS = DEFAULT_RETENTION_S,
    /** The key space (a partition-aware one names keys under hash tags). */
    keys = new DeploymentKeys(prefix),
  ) {
    this.keys = keys;
    this.calls = new RunCalls(redis, this.keys);
    this.indexes = new RunIndexes(redis, this.keys);
    this.scripts = new RunScripts(redis, keys);
    this.webhooks = new WebhookLog(redis, this.keys, (name, runId, args) => this.scripts.run(name, runId, () => args));
  }

  static bodyHash(canonicalBody: string): string {
    return createHash('sha256').update(canonicalBody).digest('hex');
  }

  async create(input: CreateRunInput): Promise<CreateRunResult> {
    const idemKey = input.idempotencyKey ? this.keys.idempotency(input.tenant, input.idempotencyKey) : '';
    const res = await this.scripts.run(
      'createRun',
      input.runId,
      (ev) => [createRunArgs(input, { idemTtlS: IDEMPOTENCY_TTL_S, retentionS: this.retentionS, ev })],
      [...this.keys.runStatusScript(input.runId, input.tenant, idemKey), ...this.threadKeys(input)],
      input.tenant,
    );
    if (res.outcome === 'created') this.scripts.refs.remember(input.runId, { tenant: input.tenant, idem: idemKey });
    if (res.outcome === 'created' && res.values[0] === 'failed') await this.segmentEnded(input.runId, 'failed');
    switch (res.outcome) {
      case 'limited':
        return { created: false, limited: true, activeRuns: Number(res.values[0]) };
      case 'taken':
        return { created: false, taken: true };
      case 'created':
        return { created: true, runId: input.runId, status: res.values[0] === 'failed' ? 'failed' : 'queued', waitsFor: String(res.values[1] ?? '') };
      case 'thread_busy':
        return { created: false, threadBusy: true, activeRunId: String(res.values[0]) };
      case 'exists': {
        const [runId, bodyHash] = String(res.values[0]).split(' ');
        return { created: false, runId: runId!, bodyHash: bodyHash! };
      }
    }
  }

  /** createRun's thread keys (placeholders named after the run when it has no thread). */
  private threadKeys(input: CreateRunInput): string[] {
    if (!input.request.threadId) return [1, 2, 3, 4].map((i) => runPlaceholder(this.keys.run(input.runId), `nothread${i}`));
    const t = this.keys.thread(input.tenant, input.request.threadId);
    return [t.hash, t.runs, t.messages, t.waiting];
  }

  async load(runId: string): Promise<RunState | null> {
    const raw = await this.redis.hmget(this.keys.run(runId).state, ...STATE_FIELDS, 'idem');
    const st = parseRunState(stateHash(raw.slice(0, STATE_FIELDS.length)));
    if (st) this.scripts.refs.remember(runId, { tenant: st.tenant, idem: raw[STATE_FIELDS.length] ?? '' });
    return st;
  }

  /** A few fields of a run's state, read without the rest (its request alone may be 1 MiB); null when there is no run. */
  async fieldsOf<F extends string>(runId: string, fields: readonly F[]): Promise<Record<F, string | null> | null> {
    const r = await this.redis.hmget(this.keys.run(runId).state, 'id', ...fields);
    if (!r[0]) return null;
    return Object.fromEntries(fields.map((f, i) => [f, r[i + 1] ?? null])) as Record<F, string | null>;
  }

  /** The tenant that owns a run, or null when there is no such run. */
  async tenantOf(runId: string): Promise<string | null> {
    return this.redis.hget(this.keys.run(runId).state, 'tenant');
  }

  /** What an event stream needs of its run (one HMGET, never the whole state: its request alone may be 1 MiB). */
  async streamHead(runId: string): Promise<{ tenant: string; status: string; seq: number } | null> {
    const [tenant, status, seq] = await this.redis.hmget(this.keys.run(runId).state, 'tenant', 'status', 'seq');
    return tenant ? { tenant, status: status ?? '', seq: Number(seq ?? 0) } : null;
  }

  /** The transcript from index `from` on (append-only: callers cache what they have read). */
  async messages(runId: string, from = 0): Promise<Message[]> {
    const raw = await this.redis.lrange(this.keys.run(runId).messages, from, -1);
    return raw.map((m) => JSON.parse(m) as Message);
  }

  /** The transcript as the model sees it next: the compression prefix, then the history from viewFrom. */
  async view(st: Pick<RunState, 'id' | 'viewPrefix' | 'viewFrom'>): Promise<Message[]> {
    return [...st.viewPrefix, ...(await this.messages(st.id, st.viewFrom))];
  }

  /** Installs a compressed view (compare-and-set on iteration and transcript version); the new version, or null. */
  async applyCompression(runId: string, p: { iteration: number; tv: number; prefix: Message[]; from: number; record: Record<string, unknown>; events: NewEvent[] }): Promise<number | null> {
    const r = await this.scripts.run('applyCompression', runId, (ev) => [p.iteration, p.tv, wellFormedJson(p.prefix), p.from, wellFormedJson(p.record), ev(p.events)]);
    return r.outcome === 'applied' ? Number(r.values[0]) : null;
  }

  /** Adds a model call made outside the loop's checkpoints (a summary) to the run's usage; false when the run ended. */
  async addUsage(runId: string, u: Omit<Usage, 'toolCalls'>): Promise<boolean> {
    const r = await this.scripts.run('addUsage', runId, () => [u.promptTokens, u.completionTokens, u.reasoningTokens, u.totalTokens, u.costUsd.toFixed(10), u.llmCalls, u.cachedTokens ?? 0]);
    return r.outcome === 'added';
  }

  /** A client follows the run until `untilMs`: its scripts PUBLISH new events meanwhile (false: the run is gone). */
  async watch(runId: string, untilMs: number): Promise<boolean> {
    return (await this.scripts.run('watchRun', runId, () => [untilMs])).outcome === 'watching';
  }

  /** The last three compression records, newest first. */
  async compressions(runId: string): Promise<Array<Record<string, unknown>>> {
    return (await this.redis.lrange(this.keys.run(runId).compressions, 0, -1)).map((r) => JSON.parse(r));
  }

  /** Every event with seq > after, in seq order (read a page at a time: see eventsRaw). */
  async events(runId: string, after = 0): Promise<EventEnvelope[]> {
    const out: EventEnvelope[] = [];
    for (let from = after, page; ; from = page.through) {
      page = await this.eventsRaw(runId, from);
      for (const e of page.events) out.push(JSON.parse(e) as EventEnvelope);
      if (page.through <= from || page.through >= page.last) return out;
    }
  }

  /** Events after `after` as stored (JSON), up to `pageSize` seqs (lua/readEvents: `through`, `last`). */
  async eventsRaw(runId: string, after = 0, pageSize = 500): Promise<{ events: string[]; through: number; last: number }> {
    const [through, last, ...events] = (await this.scripts.run('readEvents', runId, () => [after, pageSize])).values;
    return { events: events.map(String), through: Number(through), last: Number(last) };
  }

  /** startIteration-18.lua: see iteration-start.ts (what it returns, and the results it may record first). */
  async startIteration(runId: string, p: StartParams): Promise<Started | 'stale' | 'waiting'> {
    return (await startIteration(this.scripts, runId, p)).started;
  }

  /** The same, recording the batch's local results first in the same step: their answers too. */
  startIterationRecording(runId: string, p: StartParams): ReturnType<typeof startIteration> {
    return startIteration(this.scripts, runId, p);
  }

  /** Appends events while the iteration calls the model; `firstDeltas` marks that this iteration's deltas were sent. */
  async appendEvents(runId: string, iteration: number | null, events: NewEvent[], firstDeltas = false, owner = ''): Promise<boolean> {
    if (!events.length) return true;
    const r = await this.scripts.run('appendEvents', runId, (ev) => [iteration === null ? '' : iteration, ev(events), firstDeltas ? '1' : '0', owner]);
    return r.outcome === 'appended';
  }

  /** Takes iteration k's model call over from `from` (null: it moved on); `discard` is emitted when it had sent deltas. */
  async claimModelCall(runId: string, k: number, from: string, owner: string, discard: NewEvent): Promise<{ discarded: boolean } | null> {
    const r = await this.scripts.run('claimModelCall', runId, (ev) => [k, from, owner, ev([discard])]);
    return r.outcome === 'claimed' ? { discarded: Number(r.values[0]) === 1 } : null;
  }

  /** `owner`: the delivery that owns the model call ('' = no fence); a delivery that lost it records nothing. */
  async checkpoint(runId: string, c: CheckpointInput, owner = ''): Promise<boolean | { taken: string[] }> {
    const calls = c.calls.map((x) => [x.id, wellFormedJson(x.meta), x.outcome ? wellFormedJson(x.outcome) : '']);
    const updates = checkpointUpdates(c);
    const r = await this.scripts.statusRun('checkpointResponse', runId, (ev) => [
      c.iteration, wellFormedJson(c.message), checkpointTarget(c), wellFormedJson(updates), wellFormedJson(calls), ev(c.events), c.pause ? c.pause.expiresAt : '', owner,
      wellFormedJson(checkpointIncrements(c)),
    ]);
    if (r.outcome === 'ids_taken') return { taken: r.values.map(String) };
    const target = checkpointTarget(c);
    if (r.outcome === 'recorded' && target !== 'tools') await this.segmentEnded(runId, target, c.iteration);
    return r.outcome === 'recorded';
  }

  /**
   * Records decisions in one step that also checks what a caller would otherwise read first: the run exists and
   * belongs to `tenant` (when given), is paused (at `expectIteration`, when given), and each call is pending a
   * decision of a fitting kind. A resume returns the run's state after the flip.
   */
  async applyDecisions(runId: string, p: { tenant: string | null; expectIteration?: number; decisions: PreparedDecision[]; edits: Record<string, string> }): Promise<DecisionOutcome> {
    const rows = p.decisions.map((d) => [d.callId, d.action, d.outcome ? wellFormedJson(d.outcome) : '', d.meta ? wellFormedJson(d.meta) : '', d.eventSuffix, d.meta ? d.meta.display : '']);
    // edited arguments rewrite the batch's assistant message here, where JSON keeps its arrays and key order; the
    // script applies it only over the text it was built from (a racing edit of another call: read again)
    for (let attempt = 0; ; attempt++) {
      const edit = Object.keys(p.edits).length ? await editedBatchMessage(this.redis, this.keys.run(runId), p.edits) : null;
      const r = decisionOutcome(await this.scripts.statusRun('applyDecisions', runId, () => [p.expectIteration ?? '', p.tenant ?? '', wellFormedJson(rows), edit?.text ?? '', edit?.index ?? '', edit?.sha1 ?? '']));
      // each stale answer means another edit of the batch committed: all make progress, so a bound this high is never
      // reached by edits alone
      if (r.kind !== 'edit_stale' || attempt >= 100) return r.kind === 'edit_stale' ? { kind: 'conflict', callId: Object.keys(p.edits)[0]! } : r;
    }
  }

  /**
   * Answers a call that must not run (cancelled, outcome_unknown, skipped, job_failed). `fence`: the delivery the
   * caller saw running it (`seen`; when another has taken it over since, nothing changes) and the caller (`by`, the
   * answered call's owner from here on). False when nothing was answered.
   */
  async closeToolCall(runId: string, callId: string, kind: Exclude<CloseKind, 'run_ended'>, fence?: { seen: string; by: string }): Promise<boolean> {
    return (await this.scripts.run('closeToolCall', runId, () => [callId, kind, fence?.seen ?? '', fence?.by ?? ''])).outcome === 'closed';
  }

  /**
   * A tool-runner is about to execute a call: one step checks the call and the run and records the start under `owner`
   * (`jobId@token`) with its `running` event. 'first': run it; 'taken': taken over from `takeFrom`; `{owned}`: another
   * delivery started it (which one is stale, only the job's lock says); 'answered', or 'cancel' / 'expired'.
   */
  async markToolRunning(runId: string, callId: string, eventData: ToolCallData, owner: string, takeFrom = ''): Promise<'first' | 'taken' | 'answered' | 'cancel' | 'expired' | { owned: string }> {
    const r = await this.scripts.run('markToolRunning', runId, (ev) => [callId, ev([{ type: 'tool.call', data: eventData }]), owner, takeFrom]);
    return r.outcome === 'owned' ? { owned: String(r.values[0] ?? '') } : r.outcome;
  }

  /**
   * Records an executed call's outcome once, by its owner (`owner`, as it recorded the start). `unstarted`: its `running`
   * event, for a call whose start was not recorded (read tools safe to retry): the step then makes the start's checks
   * too. Returns recorded, cancelled / skipped (answered so instead), stale (another delivery took the call over or
   * answered it while this one stalled: nothing written), or null (already answered).
   */
  async recordToolResult(runId: string, callId: string, outcome: ToolOutcome, eventData: ToolCallData, unstarted?: ToolCallData, owner = ''): Promise<RecordAnswer> {
    return (await this.recordBatchedToolResult(runId, callId, outcome, eventData, unstarted, owner, [])).answer;
  }

  /**
   * recordToolResult for a call of a batch published without a flow parent (ToolJob.batch): `batchAnswered` says,
   * from the same step's read, whether the batch's `others` are all answered too once this one is recorded — null
   * when this one was not recorded (the caller reads the batch when it needs to know).
   */
  async recordBatchedToolResult(runId: string, callId: string, outcome: ToolOutcome, eventData: ToolCallData, unstarted: ToolCallData | undefined, owner: string, others: readonly string[]): Promise<{ answer: RecordAnswer; batchAnswered: boolean | null }> {
    const r = await this.scripts.run('recordToolResult', runId, (ev) => [callId, wellFormedJson(outcome), ev([{ type: 'tool.call', data: eventData }]), unstarted ? ev([{ type: 'tool.call', data: unstarted }]) : '', owner, others.join(' ')]);
    if (r.outcome === 'closed') return { answer: r.values[0] === 'skipped' ? 'skipped' : 'cancelled', batchAnswered: null };
    if (r.outcome === 'stale') return { answer: 'stale', batchAnswered: null };
    return r.outcome === 'recorded' ? { answer: 'recorded', batchAnswered: r.values[0] === '1' } : { answer: null, batchAnswered: null };
  }

  /** recordToolResult for a batch of local calls, in one step per `maxBytes` of results: see recordInChunks. */
  recordToolResults(runId: string, batch: LocalResult[], maxBytes = RESULT_CHUNK_BYTES): Promise<RecordAnswer[]> {
    return recordInChunks(this.scripts, runId, batch, maxBytes);
  }

  /** Ends the run; null when it already ended or moved on, else the tool names of the calls it answered cancelled. */
  /** `owner`: the delivery that owns the iteration's model call ('' = no fence); a delivery that lost it ends nothing. */
  async finish(runId: string, p: { expectIteration: number | null; status: 'completed' | 'failed' | 'cancelled'; stopReason: StopReason | null; error: ErrorInfo | null; events: NewEvent[]; owner?: string }): Promise<{ closed: string[] } | null> {
    const r = await this.scripts.statusRun('endRun', runId, (ev) => [p.expectIteration ?? '', p.status, p.stopReason ?? '', p.error ? wellFormedJson(p.error) : '', ev(p.events), p.owner ?? '']);
    if (r.outcome === 'ended') await this.segmentEnded(runId, p.status);
    return r.outcome === 'ended' ? { closed: r.values.map(String) } : null;
  }

  /** `closed`: the tool names of the calls a paused run's cancellation answered cancelled. */
  async requestCancel(runId: string, reason: string): Promise<{ kind: 'terminal' | 'ended' | 'requested'; closed: string[] }> {
    const events: NewEvent[] = [{ type: 'run.cancelled', data: { reason } }];
    const r = await this.scripts.statusRun('requestCancel', runId, (ev) => [reason, ev(events)]);
    if (r.outcome === 'ended') await this.segmentEnded(runId, 'cancelled');
    return { kind: r.outcome, closed: r.values.map(String) };
  }

  /** SPEC §8: the one home of a segment's end, called once per step that parks or ends the run (see endSegment). */
  private segmentEnded(runId: string, ended: SegmentEnd, iteration?: number): Promise<void> {
    const claim = async (what: string) => (await this.redis.hsetnx(this.keys.run(runId).state, `sd:${what}`, '1')) === 1;
    return endSegment(runId, ended, { read: (fields) => this.fieldsOf(runId, fields), claim }, ended === 'paused' ? iteration : undefined);
  }

  /** A tenant's runs, newest first (by creation), optionally in one status: see listRuns. */
  listRuns(tenant: string, opts: { status?: string; limit: number; cursor?: ListCursor | null }): Promise<{ runs: RunSnapshot[]; nextCursor: ListCursor | null }> {
    return listRuns(this.redis, this.keys, tenant, opts);
  }
}
