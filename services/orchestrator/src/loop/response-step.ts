import type { CallMode, NewEvent } from '@agentloop/protocol';
import type { ModelResponse } from '@agentloop/llm';
import type { CheckpointInput, IterationDelivery, RunState } from '@agentloop/runtime';
import { finalOutputCheck } from '../output/final-output.js';
import type { LoopParts } from './loop-parts.js';
import { catalogForCalls } from './tool-specs.js';
import { countResponse } from './response-metrics.js';
import { dispatchCalls } from './dispatch-calls.js';
import type { Ahead } from './start-ahead.js';
import { stateAfterCheckpoint, stateAfterStart } from './predicted-state.js';

/** What a model response was, as its iteration's step after the call. */
export interface Response {
  st: RunState;
  k: number;
  callMode: CallMode;
  res: ModelResponse;
  /** The deltas still buffered: they ride with the checkpoint. */
  tailDeltas: NewEvent[];
  transcriptLength: number;
}

/**
 * The step after the model call: records iteration k's response as the planner says (the checkpoint), then acts on the
 * plan — metrics, caches, the end of the run or the dispatch of its calls — or, when iteration k+1 can start in the
 * same round trip (StartAhead), that start.
 */
export class ResponseStep {
  constructor(private readonly p: LoopParts) {}

  /** `taken`: call ids the run already used, found by a first checkpoint attempt (a provider reusing ids): renamed this time. */
  async record(delivery: IterationDelivery, r: Response, taken?: ReadonlySet<string>): Promise<void> {
    const { p } = this;
    const { st, k, callMode, res } = r;
    const catalog = await catalogForCalls(p.catalog, st.request, res.message.toolCalls);
    const outputCheck = await finalOutputCheck(st, callMode, res);
    const plan = p.planner.planResponse({
      st,
      k,
      callMode,
      response: res,
      tailDeltas: r.tailDeltas,
      catalog,
      prices: p.prices,
      nowMs: Date.now(),
      taken,
      outputCheck,
    });
    const after = plan.final || plan.failure || plan.pause ? null : stateAfterCheckpoint(st, k, plan);
    const ahead = after ? await p.ahead.prepare(delivery, after, k, plan.toRun) : null;
    const ok = ahead
      ? await this.checkpointAhead(delivery, st, after!, plan.checkpoint, ahead)
      : await p.o.store.checkpoint(st.id, plan.checkpoint, st.owner);
    if (typeof ok === 'object') return this.record(delivery, r, new Set([...(taken ?? []), ...ok.taken]));
    if (!ok) return void p.o.metrics.fenced.inc({ step: 'checkpoint' });
    countResponse(p.o.metrics, p.prices, res);
    if (plan.final) return p.end.ended(st.id, 'completed', plan.final.stopReason);
    if (plan.failure) return p.end.ended(st.id, 'failed', 'none');
    const { pause } = plan;
    if (pause)
      for (const type of new Set(pause.pending.map((x) => x.pauseType)))
        p.o.metrics.runsPaused.inc({ pause_type: type });
    p.transcripts.appended(st.id, r.transcriptLength + 1, [plan.message]);
    if (after && ok !== 'started') p.states.put(after);
    for (const c of plan.calls) {
      if (c.outcome)
        p.o.metrics.toolCalls.inc({
          tool: catalog.has(c.call.name) ? c.call.name : 'unknown',
          status: c.outcome.status,
        });
      if (c.skipReason) p.o.metrics.toolsSkipped.inc({ reason: c.skipReason });
    }
    if (!ahead) await dispatchCalls(p.dispatch, delivery, st, k, plan.toRun, pause ? pause.expiresAt : null, true);
  }

  /**
   * The checkpoint with iteration k+1's start behind it: true when checkpointed ('started' when the start applied too;
   * else the results it did not record go on with the next start), false when fenced, or the call ids already taken.
   */
  private async checkpointAhead(
    delivery: IterationDelivery,
    st: RunState,
    after: RunState,
    checkpoint: CheckpointInput,
    ahead: Ahead,
  ): Promise<boolean | 'started' | { taken: string[] }> {
    const { continuations } = this.p;
    const outcome = await this.p.ahead.send(st.id, checkpoint, st.owner, ahead);
    if (outcome.kind !== 'started' && outcome.kind !== 'checkpointed') continuations.withdraw(delivery);
    if (outcome.kind === 'taken') return { taken: outcome.taken };
    if (outcome.kind === 'fenced') return false;
    if (outcome.kind === 'checkpointed') {
      if (outcome.unrecorded.length) continuations.defer(delivery, outcome.unrecorded);
      return true;
    }
    const state = stateAfterStart(after, ahead.k, ahead.callMode, delivery.owner, outcome.started.toolCalls);
    continuations.started(delivery, { state, k: ahead.k, callMode: ahead.callMode, started: outcome.started });
    return 'started';
  }
}
