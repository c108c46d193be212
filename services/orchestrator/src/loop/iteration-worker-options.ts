import type { Redis } from 'ioredis';
import type { PriceTable, ProviderGate, ProviderRegistry } from '@agentloop/llm';
import type { Logger, Metrics, RunScheduler, RunStore, ToolCatalog } from '@agentloop/runtime';
import type { DecisionService } from '../decisions/decision-service.js';
import type { Planner } from './planner.js';
import type { LocalCalls } from './dispatch-calls.js';

/** What an IterationWorker is built from. */
export interface IterationWorkerOptions {
  redis: Redis;
  subscriber: Redis;
  store: RunStore;
  scheduler: RunScheduler;
  providers: ProviderRegistry;
  metrics: Metrics;
  logger: Logger;
  prefix: string;
  concurrency: number;
  lockMs: number;
  llmAttempts: number;
  llmRetryBaseMs: number;
  /** Longest retry-after waited out in place; longer ones defer the job (BullMQ delayed), holding no worker. */
  llmMaxWaitMs?: number;
  /** Per-provider admission (AGENTLOOP_PROVIDER_LIMITS), shared by every orchestrator. */
  gate?: ProviderGate;
  decisions: DecisionService;
  /** Model prices (built-in table + AGENTLOOP_MODEL_PRICES). */
  prices?: PriceTable;
  /** Called after every iteration job with its timings (benchmarks). */
  onIterationTimed?: (t: {
    runId: string;
    iteration: number;
    startedAt: number;
    overheadSeconds: number;
    modelSeconds: number;
  }) => void;
  /** The pure deciders [decideAdvance, planResponse]; a recorder wraps them to capture histories for replay tests. */
  planner?: Planner;
  /** This process's local tools (SPEC §6): their calls run in the iteration, with no tool job. */
  localTools?: LocalCalls;
  /** How long an iteration waits for its summary before it prunes (SPEC §3: 60 s). */
  summaryDeadlineMs?: number;
  /** The process's tool catalog (one cache for every role in it) [its own]. */
  catalog?: ToolCatalog;
}
