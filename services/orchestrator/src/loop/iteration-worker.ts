import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import {
  AdvanceJobSchema, type CallMode, type AdvanceJob, QUEUES, type Message, type NewEvent,
} from '@agentloop/protocol';
import { PriceTable, toolsTokens, type ModelResponse } from '@agentloop/llm';
import { HandedBackError, ToolCatalog, currentSegmentTp, traceIdOf, traceOfJob, withTraceparent, workerOptions, workerTakingJobs, type LocalResult, type RunState, type StartParams, type Started } from '@agentloop/runtime';
import { StateCache } from './state-cache.js';
import { answerFailedChildren, claimModelCall, startParams } from './start-iteration.js';
import { jobDelivery, ownerOf } from './job-delivery.js';
import { RunEnder } from './run-ender.js';
import { ContextGate, type Fitted } from './context-gate.js';
import type { IterationWorkerOptions } from './iteration-worker-options.js';
import { TranscriptCache } from './transcript-cache.js';
import { catalogForCalls, toolSpecsFor } from './tool-specs.js';
import { PURE_PLANNER, type AdvanceAction, type Planner } from './planner.js';
import { ModelStreamer } from './model-streamer.js';
import { finalOutputCheck } from '../output/final-output.js';
import { TimerJobs } from './timer-jobs.js';
import { dispatchCalls, redispatchCalls, type DispatchDeps } from './dispatch-calls.js';
import { countResponse } from './response-metrics.js';
import { chainedIteration } from './decide-advance.js';
import { Continuations } from './continuations.js';
const DEFAULT_PRICES = new PriceTable();

export type { IterationWorkerOptions } from './iteration-worker-options.js';

/**
 * The orchestrator's worker: one `advance` job per iteration. It decides from the run's state what the job
 * must do, calls the model (streaming deltas to the event log), checkpoints the response before any side effect,
 * and publishes the tool calls as children of the next iteration's job — or, when every call ran here (local tools)
 * and the worker has room, goes on to the next iteration itself (Continuations). Every state change is a
 * compare-and-set, so duplicate or retried jobs are harmless.
 */
export class IterationWorker {
  private worker: Worker | null = null;
  readonly isRunning = (): boolean => workerTakingJobs(this.worker); // readiness: it takes jobs
  private readonly transcripts: TranscriptCache;
  private readonly states = new StateCache();
  private readonly context: ContextGate;
  private readonly end: RunEnder;
  private readonly catalog: ToolCatalog;
  private readonly streamer: ModelStreamer;
  private readonly timers: TimerJobs;
  private readonly dispatch: DispatchDeps;
  private readonly continuations: Continuations;
  private handingBack = false;
  constructor(private readonly o: IterationWorkerOptions) {
    this.transcripts = new TranscriptCache(o.store);
    this.catalog = o.catalog ?? new ToolCatalog(o.redis, o.prefix);
    this.context = new ContextGate(o.store, this.transcripts, o.metrics, o.summaryDeadlineMs);
    this.end = new RunEnder(o.store, o.metrics, (runId) => this.forget(runId), () => this.catalog.all());
    this.continuations = new Continuations(o.concurrency);
    this.dispatch = { scheduler: o.scheduler, local: o.localTools, lockMs: o.lockMs, redis: o.redis, mayContinue: (job, k) => this.continuations.take(job, k), deferResults: (job, r) => this.continuations.defer(job, r) };
    this.timers = new TimerJobs(o.store, o.scheduler, o.decisions, o.metrics, o.logger);
    this.streamer = new ModelStreamer({ ...o, maxWaitMs: o.llmMaxWaitMs ?? 30_000, prices: o.prices ?? DEFAULT_PRICES, end: this.end, handingBack: () => this.handingBack });
  }

  private get plan(): Planner { return this.o.planner ?? PURE_PLANNER; } // prettier-ignore

  async start(): Promise<void> {
    const channel = this.o.store.keys.cancelChannel;
    this.o.subscriber.on('message', (ch: string, runId: string) => {
      if (ch === channel) this.streamer.abort(runId, new Error('run cancelled'));
    });
    await this.o.subscriber.subscribe(channel);
    this.worker = new Worker(QUEUES.orchestrator, (job, token) => this.process(job, token), {
      connection: this.o.redis.duplicate(),
      prefix: this.o.prefix,
      concurrency: this.o.concurrency,
      ...workerOptions(this.o.lockMs),
    });
    this.worker.on('error', (err) => this.o.logger.error({ err }, 'orchestrator worker error'));
    this.worker.on('stalled', () => this.o.metrics.jobsStalled.inc({ queue: QUEUES.orchestrator }));
    this.worker.on('failed', (job, err) => {
      // a job that failed for good ends its run (a malformed job names no run: nothing to end)
      const data = AdvanceJobSchema.safeParse(job?.data);
      if (!job || job.name !== 'advance' || !data.success || (job.attemptsMade < (job.opts.attempts ?? 1) && err.name !== 'UnrecoverableError')) return;
      this.end.failedJob(job.id, data.data.runId, err).catch((e: unknown) => this.o.logger.error({ err: e, runId: data.data.runId }, 'could not end the run of a failed iteration job'));
    });
    await this.worker.waitUntilReady();
  }

  async close(): Promise<void> {
    this.continuations.stop();
    await this.worker?.close();
  }

  /** Drain deadline passed: abort the model streams in flight; their jobs are retried elsewhere from the same state. */
  handBack(): void {
    this.handingBack = true;
    this.continuations.stop();
    this.streamer.abortAll(new HandedBackError());
  }

  /** One job: its iteration, and the ones it goes on to in place (Continuations), each timed on its own. */
  private async process(job: Job, token?: string): Promise<void> {
    if (await this.timers.handle(job)) return;
    const advance = AdvanceJobSchema.safeParse(job.data);
    if (!advance.success) throw new UnrecoverableError(`malformed advance job: ${advance.error.message}`); // retrying cannot fix it
    const { runId, trace } = advance.data;
    this.continuations.begin();
    try {
      for (let k: number | undefined = advance.data.iteration, plan = advance.data.plan; k !== undefined; k = this.continuations.following(job), plan = undefined) {
        const t0 = performance.now();
        const parent = await traceOfJob(trace, async () => currentSegmentTp(await this.o.store.fieldsOf(runId, ['tp', 'seg']))); // SPEC §8
        const at = k;
        const outcome = await withTraceparent(parent, () => this.advance(job, token, runId, at, plan));
        const external = typeof outcome === 'number' ? outcome : 0; // seconds in the model call (not overhead)
        const overheadSeconds = Math.max(0, (performance.now() - t0) / 1000 - external);
        this.o.metrics.observeIterationOverhead(overheadSeconds, traceIdOf(parent));
        this.o.onIterationTimed?.({ runId, iteration: k, startedAt: t0, overheadSeconds, modelSeconds: external });
      }
    } finally {
      this.continuations.end(job);
    }
  }

  /**
   * Decides and acts from the cheapest view of the run that proves current: the publisher's plan (a first iteration
   * or a resume: one start script that returns the state), else the state this process left after checkpointing
   * iteration k-1, else the state in Redis. Each guess is checked by the start script's compare-and-set; a stale one costs a read.
   */
  private async advance(job: Job, token: string | undefined, runId: string, k: number, plan: AdvanceJob['plan']): Promise<number | 'done'> {
    let cached = this.states.take(runId, k - 1);
    // the reads of the batch this job ran, when it goes on in place: recorded by the first step below (the start)
    let results = this.continuations.deferred(job);
    const act = (st: RunState, at: number, action: AdvanceAction) => {
      const r = results;
      results = cached = undefined; // the state acted on is let go of here: the iteration holds its own copy through the model call
      return this.act(job, token, st, at, action, r);
    };
    if (!cached && plan) {
      const planned = await this.startPlanned(job, token, runId, k, plan);
      if (planned !== 'stale') return planned;
    }
    if (cached) {
      const outcome = await act(cached, k, this.plan.decideAdvance(cached, k, Date.now(), job.id));
      if (outcome !== 'stale') return outcome;
    }
    cached = (await this.o.store.load(runId)) ?? undefined; // the state in Redis, in the same variable (act lets go of it)
    if (!cached) {
      if (results) await this.recordResults(runId, results);
      return 'done';
    }
    const at = chainedIteration(cached, k, job.id); // a redelivery of a job that went on in place
    const outcome = await act(cached, at, this.plan.decideAdvance(cached, at, Date.now(), job.id));
    return outcome === 'stale' ? 'done' : outcome;
  }

  /** Records results runLocal handed back, in a step of their own (the iteration that would have taken them did not start). */
  private async recordResults(runId: string, results: LocalResult[]): Promise<void> {
    this.o.localTools?.recordedLater(results, await this.o.store.recordToolResults(runId, results));
  }

  /** Carries out the decision. Returns the seconds spent in the model call, 'stale' when a start lost its CAS, or 'done'. */
  private async act(job: Job, token: string | undefined, st: RunState, k: number, action: AdvanceAction, results?: LocalResult[]): Promise<number | 'stale' | 'done'> {
    const runId = st.id;
    if (results && action.kind !== 'start') await this.recordResults(runId, results); // a start records them itself
    switch (action.kind) {
      case 'noop':
        // a gate job that runs while its run is parked: answer its children that failed for good now, so the resume
        // (a job of another flow) finds them answered instead of waiting for them
        if (st.phase === 'paused' && st.iteration === k - 1) await answerFailedChildren(this.o.store, jobDelivery(job, token, this.o.scheduler), runId);
        return 'done';
      case 'cancel':
        await this.end.cancelled(st);
        return 'done';
      case 'fail_max_iterations':
        await this.end.failedAtMaxIterations(st);
        return 'done';
      case 'redispatch':
        await redispatchCalls(this.dispatch, this.o.store, job, token, st, k);
        return 'done';
      case 'start': {
        const repair = action.repair ? st.outputRepair?.message : undefined; // the structured-output repair turn
        const delivery = jobDelivery(job, token, this.o.scheduler);
        const params = startParams(delivery, k, action.expectPhase, action.callMode, st.pendingFinal, st.iterUsage, false, repair, st.batch);
        let started = results ? await this.startRecording(runId, params, results) : await this.o.store.startIteration(runId, params);
        // a call of a resumed batch is unanswered: when its job is a child of this one that failed for good, answer it
        // and start; otherwise it still runs, and its own flow's parent starts the iteration when it is done
        if (started === 'waiting' && (await answerFailedChildren(this.o.store, delivery, runId))) started = await this.o.store.startIteration(runId, params);
        if (started === 'stale') return 'stale';
        if (started === 'waiting') return 'done';
        const current: RunState = { ...st, iteration: k, phase: 'model', status: 'running', callMode: action.callMode, owner: ownerOf(job), usage: { ...st.usage, toolCalls: started.toolCalls } };
        return this.afterStart(job, token, current, k, action.callMode, started);
      }
      case 'resume_call': {
        const mine = await claimModelCall(this.o.store, jobDelivery(job, token, this.o.scheduler), st, k);
        return mine ? this.callModel(job, token, mine, k, action.callMode, true) : 'done';
      }
    }
  }

  /** The start that records the batch's reads first, in the same step (their answers in the logs and metrics). */
  private async startRecording(runId: string, params: StartParams, results: LocalResult[]): Promise<Started | 'stale' | 'waiting'> {
    const { started, recorded } = await this.o.store.startIterationRecording(runId, { ...params, results });
    this.o.localTools?.recordedLater(results, recorded);
    return started;
  }

  /** A resumed iteration started as its publisher planned, in one step: 'stale' when the plan no longer holds. */
  private async startPlanned(job: Job, token: string | undefined, runId: string, k: number, plan: NonNullable<AdvanceJob['plan']>): Promise<number | 'stale' | 'done'> {
    const params = startParams(jobDelivery(job, token, this.o.scheduler), k, k === 1 ? 'queued' : 'tools', plan.callMode, plan.pendingFinal, plan.iterUsage, true);
    let started = await this.o.store.startIteration(runId, params);
    if (started === 'waiting' && (await answerFailedChildren(this.o.store, jobDelivery(job, token, this.o.scheduler), runId))) started = await this.o.store.startIteration(runId, params);
    if (started === 'stale' || started === 'waiting') return started === 'waiting' ? 'done' : 'stale';
    if (!started.state) return 'stale';
    return this.afterStart(job, token, started.state, k, plan.callMode, started);
  }

  private async afterStart(job: Job, token: string | undefined, current: RunState, k: number, callMode: CallMode, started: { length: number | null; edited: boolean; appended: Message[] }): Promise<number> {
    if (k === 1) this.o.metrics.runsStarted.inc();
    if (started.edited) this.transcripts.forget(current.id); // a decision rewrote arguments in the cached transcript
    else if (started.length !== null) this.transcripts.appended(current.id, started.length, started.appended);
    return this.callModel(job, token, current, k, callMode, false, started.length ?? undefined);
  }

  /** Iteration k's model call, then its checkpoint and dispatch. Returns the seconds spent waiting on the model. */
  private async callModel(job: Job, token: string | undefined, st: RunState, k: number, mode: CallMode, resumed: boolean, knownLength?: number): Promise<number> {
    const runId = st.id;
    const request = st.request;
    const first = await this.transcripts.view(st, knownLength);
    if (first.problems.length) {
      await this.end.failed(runId, 'state_corrupt', `the transcript violates the pairing invariant: ${first.problems[0]}`);
      return 0;
    }
    let fitted: Fitted = { view: first, tools: mode === 'tools' ? await toolSpecsFor(this.catalog, request) : null, callMode: mode };
    fitted = await this.context.fit(jobDelivery(job, token, this.o.scheduler), st, k, fitted);
    const t0 = performance.now();
    for (let contextRetries = 0; ; contextRetries++) {
      const outcome = await this.streamer.stream(st, k, resumed, fitted);
      if (outcome.kind === 'ok') {
        const modelSeconds = (performance.now() - t0) / 1000;
        // calibrating takes an exact count: worth it only once the transcript nears the compression threshold
        if (this.context.nearThreshold(request, fitted)) this.transcripts.calibrate(runId, fitted.view.tokens + toolsTokens(fitted.view.counter, fitted.tools), outcome.response.usage.promptTokens);
        await this.afterResponse(job, token, st, k, fitted.callMode, outcome.response, outcome.tailDeltas, fitted.view.historyLength);
        return modelSeconds;
      }
      if (outcome.kind === 'context_length' && contextRetries < 3 && fitted.callMode !== 'context_limit') {
        // The provider counted more than we did: take the next step of the ladder and try once more.
        fitted = await this.context.fit(jobDelivery(job, token, this.o.scheduler), st, k, fitted, true);
        continue;
      }
      if (outcome.kind === 'defer') {
        // every model of the chain asks for a long pause: the job waits as a delayed job, not in this worker
        const { provider, name } = request.model;
        if (!outcome.quiet)
          await this.o.store.appendEvents(runId, k, [{ type: 'llm.retry', data: { provider, model: name, attempt: 1, reason: `rate_limit (deferred ${Math.round(outcome.ms / 1000)} s)`, discardOutput: false } }]);
        if (!token) throw new Error('rate limited: no lock token to defer the job with');
        await job.moveToDelayed(Date.now() + outcome.ms, token);
        throw new DelayedError();
      }
      if (outcome.kind === 'context_length') {
        await this.end.withoutAnswer(st, k, 'The conversation no longer fits the model context window, even reduced to the last request; no answer could be produced.');
        return (performance.now() - t0) / 1000;
      }
      return (performance.now() - t0) / 1000;
    }
  }

  /**
   * Records iteration k's response (with the deltas still buffered) as the planner says, then acts on the plan:
   * metrics, caches, dispatch. `taken`: call ids the run already used, found by a first checkpoint attempt (a
   * provider reusing ids): renamed this time.
   */
  private async afterResponse(job: Job, token: string | undefined, st: RunState, k: number, callMode: CallMode, res: ModelResponse, tailDeltas: NewEvent[], transcriptLength: number, taken?: ReadonlySet<string>): Promise<void> {
    const catalog = await catalogForCalls(this.catalog, st.request, res.message.toolCalls);
    const outputCheck = await finalOutputCheck(st, callMode, res);
    const plan = this.plan.planResponse({ st, k, callMode, response: res, tailDeltas, catalog, prices: this.prices, nowMs: Date.now(), taken, outputCheck });
    const ok = await this.o.store.checkpoint(st.id, plan.checkpoint, st.owner);
    if (typeof ok === 'object') return this.afterResponse(job, token, st, k, callMode, res, tailDeltas, transcriptLength, new Set([...(taken ?? []), ...ok.taken]));
    if (!ok) return void this.o.metrics.fenced.inc({ step: 'checkpoint' });
    countResponse(this.o.metrics, this.prices, res);
    if (plan.final) return this.end.ended(st.id, 'completed', plan.final.stopReason);
    if (plan.failure) return this.end.ended(st.id, 'failed', 'none');
    const { pause, checkpoint } = plan;
    if (pause) for (const type of new Set(pause.pending.map((p) => p.pauseType))) this.o.metrics.runsPaused.inc({ pause_type: type });
    this.transcripts.appended(st.id, transcriptLength + 1, [plan.message]);
    if (!pause)
      this.states.put({
        ...st, phase: 'tools', iteration: k, iterUsage: plan.iterationUsage, pendingFinal: checkpoint.pendingFinal, batch: plan.calls.map((c) => c.call.id),
        repeatFingerprint: checkpoint.repeat.fingerprint, repeatCount: checkpoint.repeat.count, usage: { ...plan.totals, toolCalls: st.usage.toolCalls },
        outputRepair: checkpoint.outputRepair ?? st.outputRepair,
      });
    for (const c of plan.calls) {
      if (c.outcome) this.o.metrics.toolCalls.inc({ tool: catalog.has(c.call.name) ? c.call.name : 'unknown', status: c.outcome.status });
      if (c.skipReason) this.o.metrics.toolsSkipped.inc({ reason: c.skipReason });
    }
    await dispatchCalls(this.dispatch, job, token, st, k, plan.toRun, pause ? pause.expiresAt : null, true);
  }

  private get prices(): PriceTable { return this.o.prices ?? DEFAULT_PRICES; } // prettier-ignore

  private forget(runId: string): void {
    this.transcripts.forget(runId);
    this.states.forget(runId);
  }
}
