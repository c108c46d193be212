import type { CallMode, NewEvent } from '@agentloop/protocol';
import type { ModelResponse } from '@agentloop/llm';
import {
  recordableWithStart,
  type CheckpointInput,
  type IterationDelivery,
  type RunState,
  type Started,
} from '@agentloop/runtime';
import { finalOutputCheck } from '../output/final-output.js';
import type { LoopParts } from './loop-parts.js';
import { catalogForCalls } from './tool-specs.js';
import { countResponse } from './response-metrics.js';
import { dispatchCalls } from './dispatch-calls.js';
import type { Ahead, AheadOutcome } from './start-ahead.js';
import type { Confirmation } from './continuations.js';
import type { ResponsePlan } from './plan-response.js';
import { stateAfterCheckpoint, stateAfterStart } from './predicted-state.js';
import { predictedStart, samePrediction } from './start-prediction.js';

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
 * same round trip (StartAhead), that start. When what that start will append is known here (every call answered in
 * the checkpoint or read by this job, the transcript cached), k+1's model call goes out without waiting for Redis'
 * answer: its output is used only once the round trip confirms the start as predicted (Confirmation); else it is
 * dropped and k+1 runs again from what Redis recorded. Nothing of k+1 is written before that answer (ModelStep's
 * `confirm`; the fence alone would not do: k+1 runs again under the same delivery).
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
    const predicted =
      // not when a call id of the batch was used before: the checkpoint would rename it (ids_taken), not start; nor
      // when the reads are too large to ride with the start (sent apart, the start waits for the next step)
      ahead &&
      !taken &&
      recordableWithStart(ahead.results) &&
      p.transcripts.callIdsFree(
        st.id,
        r.transcriptLength,
        plan.calls.map((c) => c.call.id),
      )
        ? predictedStart(plan, ahead, r.transcriptLength, st.usage.toolCalls)
        : null;
    if (ahead && predicted) return this.startPredicted(delivery, r, plan, catalog, after!, ahead, predicted);
    const sent = ahead ? await this.checkpointAhead(delivery, st, after!, plan.checkpoint, ahead) : null;
    const ok = sent
      ? sent.kind !== 'fenced' && (sent.kind === 'taken' ? { taken: sent.taken } : true)
      : await p.o.store.checkpoint(st.id, plan.checkpoint, st.owner);
    if (typeof ok === 'object') return this.record(delivery, r, new Set([...(taken ?? []), ...ok.taken]));
    if (!ok) return void p.o.metrics.fenced.inc({ step: 'checkpoint' });
    this.checkpointed(r, plan, catalog);
    if (plan.final) return p.end.ended(st.id, 'completed', plan.final.stopReason);
    if (plan.failure) return p.end.ended(st.id, 'failed', 'none');
    const { pause } = plan;
    if (pause)
      for (const type of new Set(pause.pending.map((x) => x.pauseType)))
        p.o.metrics.runsPaused.inc({ pause_type: type });
    p.transcripts.appended(st.id, r.transcriptLength + 1, [plan.message]);
    if (after && sent?.kind !== 'started') p.states.put(after);
    if (!ahead) await dispatchCalls(p.dispatch, delivery, st, k, plan.toRun, pause ? pause.expiresAt : null, true);
  }

  /** What a checkpoint that applied counts: the response, the calls it answered or skipped. */
  private checkpointed(r: Response, plan: ResponsePlan, catalog: ReadonlySet<string> | Map<string, unknown>): void {
    const { metrics } = this.p.o;
    countResponse(metrics, this.p.prices, r.res);
    for (const c of plan.calls) {
      if (c.outcome)
        metrics.toolCalls.inc({ tool: catalog.has(c.call.name) ? c.call.name : 'unknown', status: c.outcome.status });
      if (c.skipReason) metrics.toolsSkipped.inc({ reason: c.skipReason });
    }
  }

  /**
   * The checkpoint and k+1's start go out; k+1 goes on at once with the start as predicted (its transcript cached), and
   * its model call waits for `confirm` before it uses anything it streamed.
   */
  private startPredicted(
    delivery: IterationDelivery,
    r: Response,
    plan: ResponsePlan,
    catalog: ReadonlySet<string> | Map<string, unknown>,
    after: RunState,
    ahead: Ahead,
    predicted: Started,
  ): void {
    const { p } = this;
    const { st } = r;
    p.transcripts.appended(st.id, r.transcriptLength + 1, [plan.message]);
    const confirm = this.checkpointAhead(delivery, st, after, plan.checkpoint, ahead, false).then(
      async (sent): Promise<Confirmation> => {
        if (sent.kind === 'taken') {
          p.transcripts.forget(st.id);
          await this.record(delivery, r, new Set(sent.taken)); // renamed
          // the new record committed this job to k+1 (taken here: 'again' runs it), or published k+1's job
          return p.continuations.following(delivery) === ahead.k ? 'again' : 'done';
        }
        if (sent.kind === 'fenced') {
          p.transcripts.forget(st.id);
          p.o.metrics.fenced.inc({ step: 'checkpoint' });
          return 'done';
        }
        this.checkpointed(r, plan, catalog);
        if (sent.kind === 'started' && samePrediction(sent.started, predicted)) return 'go';
        p.transcripts.forget(st.id); // the cache holds the prediction: read what Redis recorded
        if (sent.kind === 'checkpointed') p.states.put(after);
        else this.startedAhead(delivery, after, ahead, sent.started); // k+1 again, from the start that applied
        return 'again';
      },
    );
    confirm.then(
      (outcome) => p.o.metrics.predictedStarts.inc({ outcome }),
      () => undefined, // (awaited by k+1's model call, which fails its job on an error; never left unhandled)
    );
    const state = stateAfterStart(after, ahead.k, ahead.callMode, delivery.owner, predicted.toolCalls);
    p.continuations.started(delivery, { state, k: ahead.k, callMode: ahead.callMode, started: predicted, confirm });
  }

  /**
   * The checkpoint with iteration k+1's start behind it; what it answered. A start that applied is the job's next step
   * (`keep`; a predicted start keeps its own, ResponseStep.startPredicted).
   */
  private async checkpointAhead(
    delivery: IterationDelivery,
    st: RunState,
    after: RunState,
    checkpoint: CheckpointInput,
    ahead: Ahead,
    keep = true,
  ): Promise<AheadOutcome> {
    const { continuations } = this.p;
    const outcome = await this.p.ahead.send(st.id, checkpoint, st.owner, ahead);
    if (outcome.kind === 'taken' || outcome.kind === 'fenced') continuations.withdraw(delivery);
    if (outcome.kind === 'checkpointed' && outcome.unrecorded.length) continuations.defer(delivery, outcome.unrecorded);
    if (outcome.kind === 'started' && keep) this.startedAhead(delivery, after, ahead, outcome.started);
    return outcome;
  }

  private startedAhead(delivery: IterationDelivery, after: RunState, ahead: Ahead, started: Started): void {
    const state = stateAfterStart(after, ahead.k, ahead.callMode, delivery.owner, started.toolCalls);
    this.p.continuations.started(delivery, { state, k: ahead.k, callMode: ahead.callMode, started });
  }
}
