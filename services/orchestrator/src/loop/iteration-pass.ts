import type { AdvanceJob, CallMode, Message } from '@agentloop/protocol';
import type { IterationDelivery, LocalResult, RunState } from '@agentloop/runtime';
import type { LoopParts } from './loop-parts.js';
import type { AdvanceAction } from './planner.js';
import { answerFailedChildren, claimModelCall } from './start-iteration.js';
import { redispatchCalls } from './dispatch-calls.js';
import { chainedIteration } from './decide-advance.js';
import type { StartAnswer } from './iteration-starter.js';
import { ModelStep } from './model-step.js';
import type { ShellCommand } from './shell-commands.js';
import type { Confirmation } from './continuations.js';

/** What an iteration came to: the seconds spent in its model call, nothing to do, or a wait for the shell. */
export type IterationOutcome = number | 'done' | ShellCommand;

/**
 * One iteration of a run, in one pass: decide from the cheapest view of the run that proves current, start (or take
 * the model call over), call the model, record the response and dispatch its calls (ModelStep, ResponseStep). It
 * knows no queue: the delivery is its job as the shell adapted it, and the waits it needs are returned to the shell.
 */
export class IterationPass {
  private readonly model: ModelStep;

  constructor(private readonly p: LoopParts) {
    this.model = new ModelStep(p);
  }

  /**
   * The views, cheapest first: an iteration started behind the previous checkpoint (StartAhead); the publisher's plan
   * (a first iteration or a resume: one start script that returns the state); the state this process left after
   * checkpointing iteration k-1; the state in Redis. Each guess is checked by the start script's compare-and-set; a
   * stale one costs a read.
   */
  async advance(
    delivery: IterationDelivery,
    runId: string,
    k: number,
    plan: AdvanceJob['plan'],
  ): Promise<IterationOutcome> {
    const { p } = this;
    const ahead = p.continuations.takeStarted(delivery, k);
    if (ahead) return this.afterStart(delivery, ahead.state, k, ahead.callMode, ahead.started, ahead.confirm);
    let cached = p.states.take(runId, k - 1);
    // the reads of the batch this job ran, when it goes on in place: recorded by the first step below (the start)
    let results = p.continuations.deferred(delivery);
    const act = (st: RunState, at: number, action: AdvanceAction) => {
      const r = results;
      results = cached = undefined; // the state acted on is let go of here: the iteration holds its own copy through the model call
      return this.act(delivery, st, at, action, r);
    };
    if (!cached && plan) {
      const planned = await this.started(delivery, k, await p.starter.startPlanned(delivery, runId, k, plan));
      if (planned !== 'stale') return planned;
    }
    if (cached) {
      const outcome = await act(cached, k, p.planner.decideAdvance(cached, k, Date.now(), delivery.jobId));
      if (outcome !== 'stale') return outcome;
    }
    cached = (await p.o.store.load(runId)) ?? undefined; // the state in Redis, in the same variable (act lets go of it)
    if (!cached) {
      if (results) await p.starter.recordResults(runId, results);
      return 'done';
    }
    const at = chainedIteration(cached, k, delivery.jobId); // a redelivery of a job that went on in place
    const outcome = await act(cached, at, p.planner.decideAdvance(cached, at, Date.now(), delivery.jobId));
    return outcome === 'stale' ? 'done' : outcome;
  }

  /** Carries out the decision: 'stale' when a start lost its compare-and-set. */
  private async act(
    delivery: IterationDelivery,
    st: RunState,
    k: number,
    action: AdvanceAction,
    results?: LocalResult[],
  ): Promise<IterationOutcome | 'stale'> {
    const { p } = this;
    const runId = st.id;
    if (results && action.kind !== 'start') await p.starter.recordResults(runId, results); // a start records them itself
    switch (action.kind) {
      case 'noop':
        // a gate job that runs while its run is parked: answer its children that failed for good now, so the resume
        // (a job of another flow) finds them answered instead of waiting for them
        if (st.phase === 'paused' && st.iteration === k - 1) await answerFailedChildren(p.o.store, delivery, runId);
        return 'done';
      case 'cancel':
        await p.end.cancelled(st);
        return 'done';
      case 'fail_max_iterations':
        await p.end.failedAtMaxIterations(st);
        return 'done';
      case 'redispatch':
        await redispatchCalls(p.dispatch, p.o.store, delivery, st, k);
        return 'done';
      case 'start':
        return this.started(delivery, k, await p.starter.start(delivery, st, k, action, results));
      case 'resume_call': {
        const mine = await claimModelCall(p.o.store, delivery, st, k);
        return mine ? this.model.call(delivery, mine, k, action.callMode, true) : 'done';
      }
    }
  }

  private started(
    delivery: IterationDelivery,
    k: number,
    s: StartAnswer,
  ): Promise<IterationOutcome> | 'stale' | 'done' {
    return typeof s === 'object' ? this.afterStart(delivery, s.state, k, s.callMode, s.started) : s;
  }

  private async afterStart(
    delivery: IterationDelivery,
    current: RunState,
    k: number,
    callMode: CallMode,
    started: { length: number | null; edited: boolean; appended: Message[] },
    confirm?: Promise<Confirmation>,
  ): Promise<IterationOutcome> {
    const { p } = this;
    if (k === 1) p.o.metrics.runsStarted.inc();
    if (started.edited)
      p.transcripts.forget(current.id); // a decision rewrote arguments in the cached transcript
    else if (started.length !== null)
      p.transcripts.appended(current.id, started.length, started.appended, current.model);
    return this.model.call(delivery, current, k, callMode, false, started.length ?? undefined, confirm);
  }
}
