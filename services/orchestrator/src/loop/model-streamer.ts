import {
  LlmError,
  callModelChain,
  providerReadyOutput,
  strategyFor,
  type ModelResponse,
  type PriceTable,
  type ProviderGate,
  type ProviderRegistry,
} from '@agentloop/llm';
import type { NewEvent } from '@agentloop/protocol';
import {
  HandedBackError,
  endChatSpan,
  startChatSpan,
  type Metrics,
  type RunState,
  type RunStore,
} from '@agentloop/runtime';
import type { Fitted } from './context-gate.js';
import { DeltaBuffer } from './delta-buffer.js';
import type { RunEnder } from './run-ender.js';

export type StreamOutcome =
  | { kind: 'ok'; response: ModelResponse; tailDeltas: NewEvent[] }
  | { kind: 'context_length' }
  | { kind: 'ended' }
  /** this delivery no longer owns the iteration, or the run moved on: nothing more to do here */
  | { kind: 'lost' }
  | { kind: 'defer'; ms: number; reason: string; quiet?: boolean };

export interface ModelStreamerDeps {
  store: RunStore;
  metrics: Metrics;
  providers: ProviderRegistry;
  gate?: ProviderGate;
  llmAttempts: number;
  llmRetryBaseMs: number;
  /** Longest retry-after waited out in place; longer ones defer the job. */
  maxWaitMs: number;
  prices: PriceTable;
  end: RunEnder;
  /** The process is handing its jobs back (drain deadline): an aborted stream is retried elsewhere. */
  handingBack: () => boolean;
}

/** The stream of a delivery whose events the run refused (fenced out of its iteration, or the run moved on). */
export class LostIterationError extends Error {
  constructor(runId: string, k: number) {
    super(`run ${runId} no longer takes events of this delivery for iteration ${k}`);
    this.name = 'LostIterationError';
  }
}

/**
 * Streams one iteration's model call through the fallback chain: deltas to the event log (coalesced), retries and
 * fallbacks as events and metrics, and every failure mapped to what the worker does next. Holds the abort handle of
 * each call in flight (cancellation, hand-back).
 */
export class ModelStreamer {
  private readonly inFlight = new Map<string, AbortController>();

  constructor(private readonly d: ModelStreamerDeps) {}

  abort(runId: string, reason: Error): void {
    this.inFlight.get(runId)?.abort(reason);
  }

  abortAll(reason: Error): void {
    for (const ac of this.inFlight.values()) ac.abort(reason);
  }

  /**
   * One streamed model call through the fallback chain; failures other than context length end or hand back the run
   * here. `hold`: the call went out before its start was confirmed; nothing is written before it resolves true, and
   * when it resolves false the call is stopped and nothing is written at all ('lost').
   */
  async stream(
    st: RunState,
    k: number,
    resumed: boolean,
    fitted: Fitted,
    hold?: Promise<boolean>,
  ): Promise<StreamOutcome> {
    const runId = st.id;
    const request = st.request;
    const ac = new AbortController();
    // an append refused means this delivery lost the iteration (another took its model call over) or the run moved
    // on: what the model still sends would be billed for nothing, so the call stops here
    const appended = (ok: boolean) => {
      if (ok || ac.signal.aborted) return;
      this.d.metrics.fenced.inc({ step: 'model_events' });
      ac.abort(new LostIterationError(runId, k));
    };
    const deltas = new DeltaBuffer(
      k,
      async (events, first) =>
        appended(
          await this.d.store.appendEvents(runId, k, events, first && !(resumed && st.deltaIter === k), st.owner),
        ),
      undefined,
      undefined,
      hold,
    );
    // a start that did not hold: the call's output will not be used, so it stops now
    void hold?.then((ok) => ok || ac.abort(new LostIterationError(runId, k)));
    const writable = async () => !hold || (await hold);
    this.inFlight.set(runId, ac);
    const span = startChatSpan(st, k, () => fitted.view.messages);
    const traceId = span?.isRecording() ? span.spanContext().traceId : ''; // the exemplar of a sampled call only
    try {
      const response = await callModelChain(
        this.d.providers,
        [request.model, ...request.fallbacks],
        {
          messages: fitted.view.messages,
          tools: fitted.tools,
          signal: ac.signal,
          onTextDelta: (t) => deltas.text(t),
          onReasoningDelta: (t) => deltas.reasoning(t),
          // the provider's prompt cache keeps the requests of one conversation together (OpenAI's prompt_cache_key)
          cacheKey: request.threadId ?? runId,
          // structured output on every loop call of the run (finalize and repair calls included)
          ...(request.output
            ? { output: providerReadyOutput(request.output, [request.model, ...request.fallbacks]) }
            : {}),
        },
        {
          onRetry: async (r) => {
            span?.addEvent('llm.retry', {
              'gen_ai.provider.name': r.provider,
              'gen_ai.request.model': r.model,
              'agentloop.attempt': r.attempt,
              'agentloop.reason': r.reason,
            });
            if (r.discardOutput) deltas.discard();
            await deltas.flush();
            if (!(await writable())) return;
            appended(
              await this.d.store.appendEvents(
                runId,
                k,
                [
                  {
                    type: 'llm.retry',
                    data: {
                      provider: r.provider,
                      model: r.model,
                      attempt: r.attempt,
                      reason: r.reason,
                      discardOutput: r.discardOutput,
                    },
                  },
                ],
                false,
                st.owner,
              ),
            );
          },
          onFallback: async (f) => {
            span?.addEvent('llm.fallback', { 'agentloop.from': f.from, 'agentloop.to': f.to });
            this.d.metrics.llmFallbacks.inc({ from: this.chainLabel(f.from), to: this.chainLabel(f.to) });
            if (!(await writable())) return;
            appended(await this.d.store.appendEvents(runId, k, [{ type: 'llm.fallback', data: f }], false, st.owner));
          },
          onAttempt: (a) =>
            this.d.metrics.observeLlmDuration(
              { provider: a.provider, model: this.d.prices.metricLabel(a.provider, a.model), outcome: a.outcome },
              a.seconds,
              traceId,
            ),
        },
        {
          attemptsPerModel: this.d.llmAttempts,
          baseDelayMs: this.d.llmRetryBaseMs,
          maxDelayMs: this.d.maxWaitMs,
          strategy: strategyFor(request.strategy),
          gate: this.d.gate,
        },
      );
      endChatSpan(span, { response });
      return { kind: 'ok', response, tailDeltas: await deltas.drain() };
    } catch (e) {
      endChatSpan(span, { error: e });
      deltas.discard();
      await deltas.flush();
      if (!(await writable())) return { kind: 'lost' }; // (ModelStep reads the confirmation next)
      const err = e instanceof LlmError ? e : null;
      if (err?.kind === 'aborted' || ac.signal.aborted) {
        const fresh = await this.d.store.load(runId);
        if (fresh?.cancel) await this.d.end.cancelled(fresh);
        else if (ac.signal.reason instanceof LostIterationError) return { kind: 'lost' };
        else throw this.d.handingBack() ? new HandedBackError() : e; // shutting down: the job is retried elsewhere from the same state
        return { kind: 'ended' };
      }
      if (err?.kind === 'context_length') return { kind: 'context_length' };
      // our own per-provider limit: come back later as a delayed job (quietly: nothing failed)
      if (err?.opts.throttled)
        return { kind: 'defer', ms: err.opts.retryAfterMs ?? 250, reason: err.message, quiet: true };
      const wait = err?.kind === 'rate_limit' ? (err.opts.retryAfterMs ?? 0) : 0;
      if (wait > this.d.maxWaitMs) return { kind: 'defer', ms: wait, reason: err!.message };
      if (err?.kind === 'content_filter') {
        await this.d.end.failed(
          runId,
          'content_filtered',
          `the provider refused the content: ${err.message}`,
          k,
          st.owner,
        );
        return { kind: 'ended' };
      }
      await this.d.end.failed(
        runId,
        err ? `llm_${err.kind}` : 'llm_error',
        `every model in the chain failed; last error: ${e instanceof Error ? e.message : String(e)}`,
        k,
        st.owner,
      );
      return { kind: 'ended' };
    } finally {
      // only its own: a delivery fenced out in this process must not drop the handle of the one that took over
      if (this.inFlight.get(runId) === ac) this.inFlight.delete(runId);
    }
  }

  /** A chain entry (`provider/model`) as a metric label: unknown model names as `provider/other`. */
  private chainLabel(entry: string): string {
    const slash = entry.indexOf('/');
    return slash < 0
      ? entry
      : `${entry.slice(0, slash)}/${this.d.prices.metricLabel(entry.slice(0, slash), entry.slice(slash + 1))}`;
  }
}
