import client from 'prom-client';
import { replaceWalkingGauges } from './process-gauges.js';

/** An observation's exemplar labels (prom-client types them as the metric's own label names, which trace_id is not). */
const exemplar = (traceId: string) => (traceId ? { trace_id: traceId } : {}) as never;

/** Every metric of SPEC §7, in one registry per process; each role updates the ones it owns. */
export class Metrics {
  readonly registry = new client.Registry<client.RegistryContentType>();
  readonly runsStarted = new client.Counter({
    name: 'agentloop_runs_started_total',
    help: 'Runs that started their first iteration',
    registers: [this.registry],
  });
  readonly runsFinished = new client.Counter({
    name: 'agentloop_runs_finished_total',
    help: 'Runs that ended',
    labelNames: ['status', 'stop_reason'],
    registers: [this.registry],
  });
  readonly loopIterations = new client.Counter({
    name: 'agentloop_loop_iterations_total',
    help: 'Model calls of the loop (iterations)',
    labelNames: ['provider', 'model'],
    registers: [this.registry],
  });
  /** Observed through observeIterationOverhead (exemplars). */
  readonly iterationOverhead: client.Histogram;
  /** Observed through observeLlmDuration (exemplars). */
  readonly llmDuration: client.Histogram<'provider' | 'model' | 'outcome'>;
  readonly llmTokens = new client.Counter({
    name: 'agentloop_llm_tokens_total',
    help: 'Tokens by kind',
    labelNames: ['provider', 'model', 'kind'],
    registers: [this.registry],
  });
  readonly llmFallbacks = new client.Counter({
    name: 'agentloop_llm_fallbacks_total',
    help: 'Fallbacks to the next model of the chain',
    labelNames: ['from', 'to'],
    registers: [this.registry],
  });
  readonly llmThrottled = new client.Counter({
    name: 'agentloop_llm_throttled_total',
    help: 'Model calls held back by a per-provider limit (AGENTLOOP_PROVIDER_LIMITS)',
    labelNames: ['provider', 'limit'],
    registers: [this.registry],
  });
  readonly toolCalls = new client.Counter({
    name: 'agentloop_tool_calls_total',
    help: 'Tool calls by final status',
    labelNames: ['tool', 'status'],
    registers: [this.registry],
  });
  readonly toolDuration = new client.Histogram({
    name: 'agentloop_tool_duration_seconds',
    help: 'Tool execution time',
    labelNames: ['tool', 'pool'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60],
    registers: [this.registry],
  });
  readonly toolsSkipped = new client.Counter({
    name: 'agentloop_tools_skipped_total',
    help: 'Tool calls answered without running',
    labelNames: ['reason'],
    registers: [this.registry],
  });
  readonly runsPaused = new client.Counter({
    name: 'agentloop_runs_paused_total',
    help: 'Runs parked for a decision',
    labelNames: ['pause_type'],
    registers: [this.registry],
  });
  readonly runsParked = new client.Gauge({
    name: 'agentloop_runs_parked',
    help: 'Runs parked right now (read from Redis)',
    registers: [this.registry],
  });
  readonly runsParkedOverdue = new client.Gauge({
    name: 'agentloop_runs_parked_overdue',
    help: 'Parked runs past their decision expiry by more than a minute (their expire job is late)',
    registers: [this.registry],
  });
  readonly fenced = new client.Counter({
    name: 'agentloop_fenced_writes_total',
    help: 'Writes refused because the delivery making them no longer owned its step (it stalled past its lock and its job was handed on) or the run had moved past it, by step',
    labelNames: ['step'],
    registers: [this.registry],
  });
  readonly predictedStarts = new client.Counter({
    name: 'agentloop_predicted_starts_total',
    help: "Model calls sent before Redis confirmed their iteration's start (local reads), by what the confirmation said: go (the call was used), again (dropped: the iteration ran again from what Redis recorded), done (dropped: the run moved on)",
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly reconciled = new client.Counter({
    name: 'agentloop_runs_reconciled_total',
    help: 'Live runs the reconciler found without a job to advance them, by what it did (republished, ended, answered, gone)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly jobsStalled = new client.Counter({
    name: 'agentloop_jobs_stalled_total',
    help: 'Jobs whose worker died or hung (BullMQ stalled), by queue',
    labelNames: ['queue'],
    registers: [this.registry],
  });
  readonly webhookDeliveries = new client.Counter({
    name: 'agentloop_webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: delivered (2xx), retried (to be attempted again), failed (given up)',
    labelNames: ['outcome'],
    registers: [this.registry],
  });
  readonly rateLimited = new client.Counter({
    name: 'agentloop_rate_limited_total',
    help: 'Requests and runs refused by AGENTLOOP_TENANT_LIMITS',
    labelNames: ['limit'],
    registers: [this.registry],
  });
  readonly compressions = new client.Counter({
    name: 'agentloop_compressions_total',
    help: 'Context compressions',
    labelNames: ['strategy', 'outcome'],
    registers: [this.registry],
  });
  readonly queueJobs = new client.Gauge({
    name: 'agentloop_queue_jobs',
    help: 'Jobs per queue and state (read at scrape time)',
    labelNames: ['queue', 'state'],
    registers: [this.registry],
  });

  /**
   * `exemplars` (tracing on, SPEC §8): the registry speaks OpenMetrics, and the iteration and model-latency histograms
   * carry the trace id of an observation as an exemplar (`trace_id`), so a slow bucket leads to a trace.
   */
  constructor(private readonly opts: { exemplars?: boolean } = {}) {
    const enableExemplars = opts.exemplars === true;
    if (enableExemplars) this.registry.setContentType(client.Registry.OPENMETRICS_CONTENT_TYPE);
    this.iterationOverhead = new client.Histogram({
      name: 'agentloop_iteration_overhead_seconds',
      help: 'Time an iteration job spends outside model and tool calls',
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1],
      registers: [this.registry],
      enableExemplars,
    });
    this.llmDuration = new client.Histogram({
      name: 'agentloop_llm_request_duration_seconds',
      help: 'Model request duration',
      labelNames: ['provider', 'model', 'outcome'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [this.registry],
      enableExemplars,
    });
    // event-loop delay sampled every 5 s, not prom-client's 10 ms: each wake-up of an idle process costs ~0.5 ms of
    // CPU (measured: 1 s → 10 s took 0.5–0.8 ms/s off an idle product), and a few samples per scrape still show a
    // stalled loop; nodejs_eventloop_lag_seconds itself is measured at scrape time
    client.collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 5_000 });
    replaceWalkingGauges(this.registry);
  }

  /**
   * Counts calls answered without a tool-runner (denied, submitted, cancelled). `known`: the tool catalog — other
   * names (client tools, which tenants name) are labelled `unknown`, so tenants cannot grow the series.
   */
  countCalls(names: readonly string[], status: string, known: ReadonlyMap<string, unknown>, skipReason?: string): void {
    for (const name of names) {
      this.toolCalls.inc({ tool: known.has(name) ? name : 'unknown', status });
      if (skipReason) this.toolsSkipped.inc({ reason: skipReason });
    }
  }

  /** `traceId`: the trace of the iteration ('' when none), its exemplar when exemplars are on. */
  observeIterationOverhead(seconds: number, traceId = ''): void {
    if (this.opts.exemplars)
      this.iterationOverhead.observe({ value: seconds, labels: {}, exemplarLabels: exemplar(traceId) });
    else this.iterationOverhead.observe(seconds);
  }

  observeLlmDuration(
    labels: { provider: string; model: string; outcome: string },
    seconds: number,
    traceId = '',
  ): void {
    if (this.opts.exemplars) this.llmDuration.observe({ value: seconds, labels, exemplarLabels: exemplar(traceId) });
    else this.llmDuration.observe(labels, seconds);
  }

  /** The Content-Type of text(): OpenMetrics when exemplars are on, else Prometheus text 0.0.4. */
  get contentType(): string {
    return this.registry.contentType;
  }

  async text(): Promise<string> {
    return this.registry.metrics();
  }
}
