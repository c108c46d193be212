import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import {
  DeploymentKeys,
  wellFormedJson,
  type EventEnvelope,
  type Message,
  type NewEvent,
  type Usage,
} from '@agentloop/protocol';
import { RunScripts } from './run-scripts.js';
import { allEvents, eventPage, type EventPage } from './event-pages.js';
import { applyDecisions, type DecisionsInput } from './decision-outcome.js';
import { STATE_FIELDS, parseRunState, stateHash, type RunState } from './run-state.js';
import { checkpointResponse, checkpointTarget } from './checkpoint-updates.js';
import { LIST_SCAN_LIMIT, listRuns, type RunPage } from './run-listing.js';
import { createRun } from './create-run-args.js';
import { RunCalls } from './run-calls.js';
import { RunIndexes } from './run-indexes.js';
import { WebhookLog } from './webhook-log.js';
import { startIteration, type StartParams, type Started } from './iteration-start.js';
import { endSegment, type SegmentEnd } from './tracing/segment-spans.js';
import {
  DEFAULT_RETENTION_S,
  type CheckpointInput,
  type CreateRunInput,
  type CreateRunResult,
  type DecisionOutcome,
  type EndInput,
  type ListCursor,
} from './run-store-types.js';

export * from './run-store-types.js';
export { IDEMPOTENCY_TTL_S } from './create-run-args.js';

/**
 * Run state in Redis. Every state change is one Lua script (compare-and-set on iteration/phase) that also
 * appends the events it implies; reads are plain commands, but for the events (a script reads a page of them).
 */
export class RunStore {
  readonly keys: DeploymentKeys;
  /** A run's calls: what is recorded about them, and the steps that record their starts and answers. */
  readonly calls: RunCalls;
  /** The deployment's work lists of runs (for the reconcilers). */
  readonly indexes: RunIndexes;
  /** Runs with notify: their webhook deliveries. */
  readonly webhooks: WebhookLog;
  private readonly scripts: RunScripts;
  /** Index rows a page of the listing reads at most (LIST_SCAN_LIMIT; tests make it small). */
  listScanLimit = LIST_SCAN_LIMIT;

  constructor(
    readonly redis: Redis,
    readonly prefix: string,
    /** How long a finished run's keys live (seconds). */
    readonly retentionS = DEFAULT_RETENTION_S,
  ) {
    const keys = new DeploymentKeys(prefix);
    this.keys = keys;
    this.scripts = new RunScripts(redis, keys);
    this.calls = new RunCalls(redis, this.keys, this.scripts);
    this.indexes = new RunIndexes(redis, this.keys);
    this.webhooks = new WebhookLog(redis, this.keys, (name, runId, args) => this.scripts.run(name, runId, () => args));
  }

  static bodyHash(canonicalBody: string): string {
    return createHash('sha256').update(canonicalBody).digest('hex');
  }

  async create(input: CreateRunInput): Promise<CreateRunResult> {
    const created = await createRun(this.scripts, this.keys, input, this.retentionS);
    if (created.created && created.status === 'failed') await this.segmentEnded(input.runId, 'failed');
    return created;
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
  async applyCompression(
    runId: string,
    p: {
      iteration: number;
      tv: number;
      prefix: Message[];
      from: number;
      record: Record<string, unknown>;
      events: NewEvent[];
    },
  ): Promise<number | null> {
    const r = await this.scripts.run('applyCompression', runId, (ev) => [
      p.iteration,
      p.tv,
      wellFormedJson(p.prefix),
      p.from,
      wellFormedJson(p.record),
      ev(p.events),
    ]);
    return r.outcome === 'applied' ? Number(r.values[0]) : null;
  }

  /** Adds a model call made outside the loop's checkpoints (a summary) to the run's usage; false when the run ended. */
  async addUsage(runId: string, u: Omit<Usage, 'toolCalls'>): Promise<boolean> {
    const r = await this.scripts.run('addUsage', runId, () => [
      u.promptTokens,
      u.completionTokens,
      u.reasoningTokens,
      u.totalTokens,
      u.costUsd.toFixed(10),
      u.llmCalls,
      u.cachedTokens ?? 0,
    ]);
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
  events(runId: string, after = 0): Promise<EventEnvelope[]> {
    return allEvents((from) => this.eventsRaw(runId, from), after);
  }

  /** Events after `after` as stored (JSON), up to `pageSize` seqs (lua/readEvents: `through`, `last`). */
  eventsRaw(runId: string, after = 0, pageSize = 500): Promise<EventPage> {
    return eventPage(this.scripts, runId, after, pageSize);
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
  async appendEvents(
    runId: string,
    iteration: number | null,
    events: NewEvent[],
    firstDeltas = false,
    owner = '',
  ): Promise<boolean> {
    if (!events.length) return true;
    const r = await this.scripts.run('appendEvents', runId, (ev) => [
      iteration === null ? '' : iteration,
      ev(events),
      firstDeltas ? '1' : '0',
      owner,
    ]);
    return r.outcome === 'appended';
  }

  /** Takes iteration k's model call over from `from` (null: it moved on); `discard` is emitted when it had sent deltas. */
  async claimModelCall(
    runId: string,
    k: number,
    from: string,
    owner: string,
    discard: NewEvent,
  ): Promise<{ discarded: boolean } | null> {
    const r = await this.scripts.run('claimModelCall', runId, (ev) => [k, from, owner, ev([discard])]);
    return r.outcome === 'claimed' ? { discarded: Number(r.values[0]) === 1 } : null;
  }

  /** `owner`: the delivery that owns the model call ('' = no fence); a delivery that lost it records nothing. */
  async checkpoint(runId: string, c: CheckpointInput, owner = ''): Promise<boolean | { taken: string[] }> {
    const recorded = await checkpointResponse(this.scripts, runId, c, owner);
    const target = checkpointTarget(c);
    if (recorded === true && target !== 'tools') await this.segmentEnded(runId, target, c.iteration);
    return recorded;
  }

  /**
   * Iteration k's checkpoint (it continues the run: its target is `tools`) and k+1's start sent behind it, in one round
   * trip: the start applies only over this very checkpoint (`expectOwner`: the run at k's tools under `owner`), so a
   * refused checkpoint, or a start that reached Redis first, leaves the start refused and `next.results` unrecorded.
   */
  async checkpointThenStart(
    runId: string,
    c: CheckpointInput,
    owner: string,
    next: StartParams,
  ): Promise<{ checkpointed: boolean | { taken: string[] }; start: Awaited<ReturnType<typeof startIteration>> }> {
    if (checkpointTarget(c) !== 'tools') throw new Error('checkpointThenStart: the checkpoint must continue the run');
    const [checkpointed, start] = await Promise.allSettled([
      this.checkpoint(runId, c, owner),
      startIteration(this.scripts, runId, { ...next, expectOwner: owner }),
    ]);
    if (checkpointed.status === 'rejected') throw checkpointed.reason;
    if (start.status === 'rejected') throw start.reason;
    return { checkpointed: checkpointed.value, start: start.value };
  }

  /**
   * Records decisions in one step that also checks what a caller would otherwise read first: the run exists and
   * belongs to `tenant` (when given), is paused (at `expectIteration`, when given), and each call is pending a
   * decision of a fitting kind. A resume returns the run's state after the flip.
   */
  async applyDecisions(runId: string, p: DecisionsInput): Promise<DecisionOutcome> {
    return applyDecisions(this.scripts, this.redis, this.keys, runId, p);
  }

  /** Ends the run; null when it already ended or moved on (or `p.owner` lost it), else the calls it answered cancelled. */
  async finish(runId: string, p: EndInput): Promise<{ closed: string[] } | null> {
    const r = await this.scripts.statusRun('endRun', runId, (ev) => [
      p.expectIteration ?? '',
      p.status,
      p.stopReason ?? '',
      p.error ? wellFormedJson(p.error) : '',
      ev(p.events),
      p.owner ?? '',
    ]);
    if (r.outcome === 'ended') await this.segmentEnded(runId, p.status);
    return r.outcome === 'ended' ? { closed: r.values.map(String) } : null;
  }

  /** `closed`: the tool names of the calls a paused run's cancellation answered cancelled. */
  async requestCancel(
    runId: string,
    reason: string,
  ): Promise<{ kind: 'terminal' | 'ended' | 'requested'; closed: string[] }> {
    const events: NewEvent[] = [{ type: 'run.cancelled', data: { reason } }];
    const r = await this.scripts.statusRun('requestCancel', runId, (ev) => [reason, ev(events)]);
    if (r.outcome === 'ended') await this.segmentEnded(runId, 'cancelled');
    return { kind: r.outcome, closed: r.values.map(String) };
  }

  /** SPEC §8: the one home of a segment's end, called once per step that parks or ends the run (see endSegment). */
  private segmentEnded(runId: string, ended: SegmentEnd, iteration?: number): Promise<void> {
    const claim = async (what: string) =>
      (await this.redis.hsetnx(this.keys.run(runId).state, `sd:${what}`, '1')) === 1;
    return endSegment(
      runId,
      ended,
      { read: (fields) => this.fieldsOf(runId, fields), claim },
      ended === 'paused' ? iteration : undefined,
    );
  }

  /** A tenant's runs, newest first (by creation), optionally in one status: see listRuns. */
  listRuns(tenant: string, opts: { status?: string; limit: number; cursor?: ListCursor | null }): Promise<RunPage> {
    return listRuns(this.redis, this.keys, tenant, opts, this.listScanLimit);
  }
}
