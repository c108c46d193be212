import { PriceTable } from '@agentloop/llm';
import { ToolCatalog } from '@agentloop/runtime';
import type { IterationWorkerOptions } from './iteration-worker-options.js';
import { StateCache } from './state-cache.js';
import { TranscriptCache } from './transcript-cache.js';
import { ContextGate } from './context-gate.js';
import { RunEnder } from './run-ender.js';
import { ModelStreamer } from './model-streamer.js';
import { Continuations } from './continuations.js';
import { StartAhead } from './start-ahead.js';
import { IterationStarter } from './iteration-starter.js';
import { PURE_PLANNER, type Planner } from './planner.js';
import type { DispatchDeps } from './dispatch-calls.js';

const DEFAULT_PRICES = new PriceTable();

/** What the steps of an iteration share in one orchestrator process: its caches, its gates and its deciders. */
export interface LoopParts {
  o: IterationWorkerOptions;
  planner: Planner;
  prices: PriceTable;
  catalog: ToolCatalog;
  transcripts: TranscriptCache;
  states: StateCache;
  context: ContextGate;
  end: RunEnder;
  streamer: ModelStreamer;
  dispatch: DispatchDeps;
  continuations: Continuations;
  ahead: StartAhead;
  starter: IterationStarter;
}

/** The parts, built once per worker. `handingBack`: whether the worker is past its drain deadline. */
export function loopParts(o: IterationWorkerOptions, handingBack: () => boolean): LoopParts {
  const planner = o.planner ?? PURE_PLANNER;
  const prices = o.prices ?? DEFAULT_PRICES;
  const transcripts = new TranscriptCache(o.store);
  const states = new StateCache();
  const catalog = o.catalog ?? new ToolCatalog(o.redis, o.prefix);
  const forget = (runId: string) => {
    transcripts.forget(runId);
    states.forget(runId);
  };
  const end = new RunEnder(o.store, o.metrics, forget, () => catalog.all());
  const continuations = new Continuations(o.concurrency);
  const dispatch: DispatchDeps = {
    scheduler: o.scheduler,
    local: o.localTools,
    mayContinue: (d, k) => continuations.take(d, k),
    deferResults: (d, r) => continuations.defer(d, r),
  };
  return {
    o,
    planner,
    prices,
    catalog,
    transcripts,
    states,
    end,
    continuations,
    dispatch,
    context: new ContextGate(o.store, transcripts, o.metrics, o.summaryDeadlineMs),
    streamer: new ModelStreamer({ ...o, maxWaitMs: o.llmMaxWaitMs ?? 30_000, prices, end, handingBack }),
    ahead: new StartAhead(dispatch, o.store, (st, k, now, jobId) => planner.decideAdvance(st, k, now, jobId)),
    starter: new IterationStarter(o.store, o.localTools),
  };
}
