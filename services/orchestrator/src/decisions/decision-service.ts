import {
  DEFAULT_RESULT_TOKENS,
  SAFE_CALL_ID_RE,
  resultContent,
  toolErrorOutcome,
  wellFormedJson,
  type AdvanceJob,
  type Decision,
  type NewEvent,
  type ToolOutcome,
} from '@agentloop/protocol';
import {
  SEGMENT_FIELD,
  resumeSegment,
  tracingState,
  withTraceparent,
  type CallMeta,
  type Metrics,
  type PreparedDecision,
  type RunScheduler,
  type RunState,
  type RunStore,
  type ToolCatalog,
} from '@agentloop/runtime';
import { ArgumentValidator } from './validate-arguments.js';
import { resumePlan } from './resume-plan.js';
import { capText } from '@agentloop/llm';

export type DecisionResult =
  | { kind: 'applied'; status: 'resumed' | 'waiting'; remaining: string[] }
  | { kind: 'not_found' }
  | { kind: 'conflict'; message: string }
  | { kind: 'invalid'; message: string; details: unknown };

/** The denial text the model sees (SPEC §5). */
export const denialMessage = (reason?: string) => `Tool execution denied by user.${reason ? ` Reason: ${reason}` : ''}`;

/**
 * Applies decisions to parked runs — one code path for the HTTP API, the `decisions` queue and expiry — and
 * publishes the continuation of a run whose last pending call was decided.
 */
export class DecisionService {
  private readonly validator = new ArgumentValidator();

  constructor(
    private readonly store: RunStore,
    private readonly scheduler: RunScheduler,
    private readonly catalog: ToolCatalog,
    private readonly metrics: Metrics,
  ) {}

  /**
   * Applies decisions without reading the run first: the store's script checks ownership (`tenant`, when given),
   * status and each call, so a decision costs one Redis step (plus one to read the call records of edits).
   * `expectIteration` ties the decisions to one pause (expiry).
   */
  async apply(
    tenant: string | null,
    runId: string,
    decisions: Decision[],
    expectIteration?: number,
    opts: { ownerChecked?: boolean } = {},
  ): Promise<DecisionResult> {
    // a stored call id is always safe (normalize-call-ids.ts); any other names no pending call — and must never reach
    // the store, where it would name another field of the run
    const unsafe = decisions.find((d) => !SAFE_CALL_ID_RE.test(d.callId));
    if (unsafe) {
      const owner = await this.store.tenantOf(runId);
      if (owner === null || (tenant !== null && owner !== tenant)) return { kind: 'not_found' };
      return {
        kind: 'conflict',
        message: `call ${JSON.stringify(unsafe.callId.slice(0, 80))} is not pending a decision`,
      };
    }
    const prepared: PreparedDecision[] = [];
    const edits: Record<string, string> = Object.create(null) as Record<string, string>; // call ids are keys: `__proto__` too
    // only an edit needs the stored call record: its tool's schema validates the new arguments
    const editing = decisions.filter((d) => d.action === 'approve' && d.arguments).map((d) => d.callId);
    // an edit is validated against its tool's schema, a submitted result capped like any tool result: both need the
    // call's record. Ownership first, so another tenant's run answers like a missing one and no tool name leaks.
    const reading = decisions
      .filter((d) => (d.action === 'approve' && d.arguments) || d.action === 'submit_result')
      .map((d) => d.callId);
    if (reading.length && tenant !== null && !opts.ownerChecked && (await this.store.tenantOf(runId)) !== tenant)
      return { kind: 'not_found' };
    const metas = new Map(
      reading.length ? (await this.store.calls.meta(runId, reading)).map((m, i) => [reading[i]!, m] as const) : [],
    );
    for (const d of decisions) {
      if (editing.includes(d.callId) && !metas.get(d.callId))
        return { kind: 'conflict', message: `call ${d.callId} is not pending a decision` };
      const r = await this.prepare(d, metas.get(d.callId) ?? null);
      if ('invalid' in r) return { kind: 'invalid', message: r.invalid, details: r.details };
      prepared.push(r.decision);
      if (r.edited !== undefined) edits[d.callId] = r.edited;
    }
    const out = await this.store.applyDecisions(runId, { tenant, expectIteration, decisions: prepared, edits });
    switch (out.kind) {
      case 'not_found':
        return { kind: 'not_found' };
      case 'not_paused':
        return { kind: 'conflict', message: `run ${runId} is not paused (${out.status})` };
      case 'conflict':
        return { kind: 'conflict', message: `call ${out.callId} is not pending a decision, or was already decided` };
      case 'invalid':
        return {
          kind: 'invalid',
          message:
            out.pauseType === 'requires_client_execution'
              ? `call ${out.callId} is a client tool: answer it with submit_result`
              : `call ${out.callId} awaits approval: approve or deny it`,
          details: [
            { path: ['decisions', out.callId, 'action'], message: `not allowed for a call that is ${out.pauseType}` },
          ],
        };
      case 'waiting':
        await this.countDecided(prepared, out.names);
        return { kind: 'applied', status: 'waiting', remaining: out.remaining };
      case 'resumed': {
        await this.countDecided(prepared, out.names);
        const st = out.state;
        await this.publishResume(runId, {
          iteration: st.iteration,
          tenant: st.tenant,
          approved: out.approved,
          plan: resumePlan(st),
        });
        return { kind: 'applied', status: 'resumed', remaining: [] };
      }
    }
  }

  /** Denied and submitted calls end here, not in a tool-runner: counted in agentloop_tool_calls_total here. */
  private async countDecided(prepared: PreparedDecision[], names: string[]): Promise<void> {
    if (!prepared.some((d) => d.outcome)) return;
    const known = await this.catalog.all();
    prepared.forEach((d, i) => {
      if (d.outcome) this.metrics.countCalls([names[i] ?? 'unknown'], d.outcome.status, known);
    });
  }

  private async prepare(
    d: Decision,
    meta: CallMeta | null,
  ): Promise<{ decision: PreparedDecision; edited?: string } | { invalid: string; details?: unknown }> {
    switch (d.action) {
      case 'approve': {
        if (!d.arguments || !meta)
          return { decision: { callId: d.callId, action: 'approve', outcome: null, meta: null } };
        const entry = await this.catalog.get(meta.name);
        const problems = entry ? this.validator.validate(entry.parameters, d.arguments) : [];
        if (problems.length)
          return {
            invalid: `edited arguments do not match the schema of ${meta.name}`,
            details: problems.map((message) => ({ path: ['decisions', d.callId, 'arguments'], message })),
          };
        const text = wellFormedJson(d.arguments);
        return {
          decision: {
            callId: d.callId,
            action: 'approve',
            outcome: null,
            meta: { ...meta, arguments: text, display: text },
            editedArguments: d.arguments,
          },
          edited: text,
        };
      }
      case 'deny': {
        const outcome = toolErrorOutcome('denied', denialMessage(d.reason));
        return { decision: { callId: d.callId, action: 'deny', outcome, meta: null } };
      }
      case 'submit_result': {
        const cap = meta?.maxResultTokens ?? DEFAULT_RESULT_TOKENS;
        const outcome: ToolOutcome = d.isError
          ? toolErrorOutcome(
              'tool_error',
              capText(typeof d.result === 'string' ? d.result : JSON.stringify(d.result ?? null), cap),
            )
          : { status: 'completed', content: capText(resultContent(d.result), cap), result: d.result };
        return { decision: { callId: d.callId, action: 'submit_result', outcome, meta: null } };
      }
    }
  }

  /**
   * Publishes the continuation of a run whose decisions are complete: the next iteration's job with the approved
   * calls as its children. Idempotent (fixed job ids): the reconciler calls it again, without `known`, for runs
   * whose resume did not start.
   */
  async publishResume(
    runId: string,
    known?: { iteration: number; tenant: string; approved: string[]; plan?: AdvanceJob['plan'] },
  ): Promise<void> {
    let resume = known;
    if (!resume) {
      const st = await this.store.load(runId);
      // no longer resuming (its resumed iteration started, or it ended): nothing to publish, and nothing to reconcile
      if (!st || st.status !== 'running' || st.phase !== 'tools' || !st.resuming)
        return void (await this.store.redis.zrem(this.store.keys.resumingRuns, runId));
      const decided = await this.store.calls.decisions(runId, st.batch);
      const approved = st.batch.filter((_, i) => decided[i] === 'approve');
      resume = { iteration: st.iteration, tenant: st.tenant, approved };
    }
    const { iteration: k, tenant, approved } = resume;
    const metas = approved.length ? await this.store.calls.meta(runId, approved) : [];
    const calls = approved.flatMap((id, i) =>
      metas[i]
        ? [
            {
              callId: id,
              name: metas[i]!.name,
              arguments: metas[i]!.arguments,
              pool: metas[i]!.pool,
              maxResultTokens: metas[i]!.maxResultTokens ?? DEFAULT_RESULT_TOKENS,
            },
          ]
        : [],
    );
    const resumed = tracingState.on ? await this.resumedSegment(runId, k) : undefined;
    await withTraceparent(resumed, () => this.scheduler.resume(runId, tenant, k, calls, known?.plan));
  }

  /**
   * SPEC §8: the resumed iterations hang under a segment span of their own, linked to the run's root (days old,
   * maybe); its ids and start are stored with the run (`seg`), and its span is recorded when the segment ends.
   */
  private async resumedSegment(runId: string, k: number): Promise<string | undefined> {
    const st = await this.store.fieldsOf(runId, ['tp', SEGMENT_FIELD]);
    const seg = resumeSegment(st?.tp ?? undefined, st?.[SEGMENT_FIELD], k);
    if (seg?.fresh) await this.store.redis.hset(this.store.keys.run(runId).state, SEGMENT_FIELD, seg.seg);
    return seg?.traceparent;
  }

  /** approval.timeoutMs elapsed: deny what is undecided and resume, or fail the run (onTimeout). */
  async expire(runId: string, iteration: number): Promise<void> {
    const st = await this.store.load(runId);
    if (!st || st.status !== 'paused' || st.iteration !== iteration) return;
    if (st.request.approval.onTimeout === 'fail') {
      const error = {
        code: 'approval_expired',
        message: `no decision within approval.timeoutMs (${st.request.approval.timeoutMs} ms)`,
      };
      const events: NewEvent[] = [{ type: 'run.failed', data: { error } }];
      const ended = await this.store.finish(runId, {
        expectIteration: iteration,
        status: 'failed',
        stopReason: null,
        error,
        events,
      });
      if (ended) {
        this.metrics.runsFinished.inc({ status: 'failed', stop_reason: 'none' });
        this.metrics.countCalls(ended.closed, 'cancelled', await this.catalog.all(), 'cancelled');
      }
      return;
    }
    const undecided = await this.undecided(st);
    if (!undecided.length) return;
    await this.apply(
      null,
      runId,
      undecided.map((callId) => ({ callId, action: 'deny', reason: 'no decision before the approval timeout' })),
      iteration,
    );
  }

  private async undecided(st: RunState): Promise<string[]> {
    const ids = st.pending.map((p) => p.callId);
    const decided = await this.store.calls.decisions(st.id, ids);
    return ids.filter((_, i) => !decided[i]);
  }
}
