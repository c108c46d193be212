import { DelayedError, UnrecoverableError, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  LlmError,
  PriceTable,
  SUMMARIZE_SYSTEM,
  callModelChain,
  chooseCut,
  contextWindowOf,
  counterFor,
  messageTokens,
  renderForSummary,
  summaryPrefix,
  type LlmUsage,
  type ProviderGate,
  type ProviderRegistry,
} from '@agentloop/llm';
import { CompressJobSchema, ModelSpecSchema, QUEUES, type Message, type ModelSpec } from '@agentloop/protocol';
import {
  currentSegmentTp,
  endCompressSpan,
  inSpan,
  startCompressSpan,
  traceOfJob,
  tracingState,
  workerOptions,
  workerTakingJobs,
  type Logger,
  type Metrics,
  type RunStore,
} from '@agentloop/runtime';

const DEFAULT_PRICES = new PriceTable();

export type CompressResult =
  | { outcome: 'ok'; tokensBefore: number; tokensAfter: number }
  | { outcome: 'skipped' | 'failed' | 'no_shrink'; reason: string };

/** Share of the context window the kept recent turns may use after a summary. */
export const KEEP_SHARE = 0.3;

export interface CompressorOptions {
  redis: Redis;
  prefix: string;
  store: RunStore;
  providers: ProviderRegistry;
  metrics: Metrics;
  logger: Logger;
  /** AGENTLOOP_COMPRESSION_MODEL ("provider/name"): summarize with this model instead of the run's. */
  compressionModel?: string;
  lockMs: number;
  prices?: PriceTable;
  /** Per-provider admission (AGENTLOOP_PROVIDER_LIMITS), shared with the loop's model calls. */
  gate?: ProviderGate;
}

/**
 * The compressor role: summarizes the older part of a run's transcript with a model, keeping the system prompt, the
 * last user message and the most recent turns (cut at a turn boundary, so no call is separated from its result and
 * kept turns keep their reasoning and provider data), and installs the new view with a compare-and-set on the
 * transcript version. Failures are results (the orchestrator then prunes), never retries of a failing model.
 */
export class CompressorWorker {
  private worker: Worker | null = null;
  constructor(private readonly o: CompressorOptions) {}

  async start(): Promise<void> {
    this.worker = new Worker(QUEUES.compressor, (job, token) => this.process(job, token), {
      connection: this.o.redis.duplicate(),
      prefix: this.o.prefix,
      concurrency: 4,
      ...workerOptions(this.o.lockMs),
    });
    this.worker.on('error', (err) => this.o.logger.error({ err }, 'compressor worker error'));
    await this.worker.waitUntilReady();
  }

  handBack(): void {} // a summary is cheap to redo: an interrupted job is simply retried

  /** Whether its worker takes jobs (readiness). */
  isRunning(): boolean {
    return workerTakingJobs(this.worker);
  }

  async close(): Promise<void> {
    await this.worker?.close();
  }

  private async process(job: Job, token?: string): Promise<CompressResult> {
    const parsed = CompressJobSchema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError(`malformed compress job: ${parsed.error.message}`);
    const { runId, iteration, tv, trace } = parsed.data;
    let result: CompressResult;
    // SPEC §8: the summary is a `compress` span of the run's trace (under the iteration's segment)
    const run = tracingState.on ? await this.o.store.fieldsOf(runId, ['tp', 'seg', 'tenant']) : null;
    const span = run
      ? startCompressSpan(
          { id: runId, tenant: run.tenant ?? '' },
          iteration,
          await traceOfJob(trace, async () => currentSegmentTp(run)),
        )
      : null;
    try {
      result = await inSpan(span, () => this.compress(runId, iteration, tv));
      endCompressSpan(span, result);
    } catch (e) {
      endCompressSpan(span, e instanceof LlmError && e.opts.throttled ? { outcome: 'deferred' } : { error: e });
      // held back by a per-provider limit: the job comes back as a delayed job, its iteration still waiting for it
      if (!(e instanceof LlmError && e.opts.throttled) || !token) throw e;
      await job.moveToDelayed(Date.now() + (e.opts.retryAfterMs ?? 250), token);
      throw new DelayedError();
    }
    this.o.metrics.compressions.inc({ strategy: 'summarize', outcome: result.outcome });
    if (result.outcome !== 'ok') this.o.logger.info({ runId, iteration, ...result }, 'summarization did not apply');
    return result;
  }

  async compress(runId: string, iteration: number, tv: number): Promise<CompressResult> {
    const st = await this.o.store.load(runId);
    if (!st || st.iteration !== iteration || st.phase !== 'model' || st.tv !== tv)
      return { outcome: 'skipped', reason: 'the run moved on' };
    const view = await this.o.store.view(st);
    const counter = counterFor(st.model);
    const tokens = view.map((m) => messageTokens(counter, m));
    const before = tokens.reduce((a, b) => a + b, 0);
    const firstTurn = view.findIndex((m) => m.role !== 'system');
    const cut = chooseCut(view, tokens, KEEP_SHARE * contextWindowOf(st.model), firstTurn + 1);
    const older = view.slice(0, cut).filter((m) => m.role !== 'system');
    if (!older.length) return { outcome: 'no_shrink', reason: 'nothing older than the kept turns' };
    let summary: string;
    try {
      const res = await callModelChain(
        this.o.providers,
        this.models(st.model, st.request.fallbacks),
        {
          messages: [
            { role: 'system', content: SUMMARIZE_SYSTEM },
            { role: 'user', content: renderForSummary(older) },
          ],
          tools: null,
        },
        {},
        { gate: this.o.gate },
      );
      summary = res.message.content ?? '';
      await this.bill(runId, res.provider, res.model, res.usage);
    } catch (e) {
      if (e instanceof LlmError && e.opts.throttled) throw e; // not a failure: process() defers the job
      return { outcome: 'failed', reason: e instanceof LlmError ? `${e.kind}: ${e.message}` : String(e) };
    }
    if (!summary.trim()) return { outcome: 'failed', reason: 'the summary was empty' };
    // Express the new view as prefix + history[from..]: the kept part is either in the old prefix or in history.
    const oldPrefixLen = st.viewPrefix.length;
    const prefix: Message[] = summaryPrefix(view, cut, summary);
    let from = st.viewFrom;
    if (cut >= oldPrefixLen) from = st.viewFrom + (cut - oldPrefixLen);
    else prefix.push(...st.viewPrefix.slice(cut));
    const after = [...prefix, ...view.slice(Math.max(cut, oldPrefixLen))].reduce(
      (n, m) => n + messageTokens(counter, m),
      0,
    );
    if (after >= before)
      return { outcome: 'no_shrink', reason: `the summary did not shrink the context (${before} → ${after} tokens)` };
    const applied = await this.o.store.applyCompression(runId, {
      iteration,
      tv,
      prefix,
      from,
      record: {
        at: new Date().toISOString(),
        strategy: 'summarize',
        tokensBefore: before,
        tokensAfter: after,
        from,
        summarized: older.length,
      },
      events: [
        { type: 'context.compressed', data: { strategy: 'summarize', tokensBefore: before, tokensAfter: after } },
      ],
    });
    if (!applied) return { outcome: 'skipped', reason: 'the transcript changed meanwhile' };
    return { outcome: 'ok', tokensBefore: before, tokensAfter: after };
  }

  /** A summary is billed like a loop call: usage totals (so budgets see it) and token metrics. */
  private async bill(runId: string, provider: string, model: string, u: LlmUsage): Promise<void> {
    const prices = this.o.prices ?? DEFAULT_PRICES;
    const cost = prices.cost(provider, model, u);
    const label = prices.metricLabel(provider, model);
    for (const [kind, n] of [
      ['prompt', u.promptTokens],
      ['completion', u.completionTokens],
      ['reasoning', u.reasoningTokens],
      ['cached', u.cachedTokens],
    ] as const)
      if (n) this.o.metrics.llmTokens.inc({ provider, model: label, kind }, n);
    await this.o.store.addUsage(runId, {
      promptTokens: u.promptTokens,
      completionTokens: u.completionTokens,
      reasoningTokens: u.reasoningTokens,
      cachedTokens: u.cachedTokens,
      totalTokens: u.promptTokens + u.completionTokens,
      costUsd: cost,
      llmCalls: 1,
    });
  }

  private models(runModel: ModelSpec, fallbacks: ModelSpec[]): ModelSpec[] {
    if (!this.o.compressionModel) return [runModel, ...fallbacks];
    const [provider, ...name] = this.o.compressionModel.split('/');
    const spec = ModelSpecSchema.safeParse({ provider, name: name.join('/') });
    return spec.success ? [spec.data, runModel, ...fallbacks] : [runModel, ...fallbacks];
  }
}
