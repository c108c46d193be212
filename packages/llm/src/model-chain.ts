import type { ModelSpec } from '@agentloop/protocol';
import type { ProviderRegistry } from './providers/registry.js';
import { functionCalling, type Strategy } from './strategies/strategy.js';
import { LlmError, type ModelCallRequest, type ModelResponse, type ProviderGate } from './types.js';

export interface RetryInfo {
  provider: string;
  model: string;
  attempt: number;
  reason: string;
  discardOutput: boolean;
  delayMs: number;
}

export interface ChainHooks {
  onRetry?: (info: RetryInfo) => void | Promise<void>;
  onFallback?: (info: { from: string; to: string; reason: string }) => void | Promise<void>;
  /** Called once per attempt with its outcome (for latency metrics). */
  onAttempt?: (info: { provider: string; model: string; outcome: 'ok' | 'error'; seconds: number }) => void;
}

export interface ChainOptions {
  attemptsPerModel?: number;
  baseDelayMs?: number;
  maxDelayMs?: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** How tools are offered and read [function_calling]. */
  strategy?: Strategy;
  /** Per-provider admission (concurrency / rate limits); none = unlimited. */
  gate?: ProviderGate;
}

const label = (m: ModelSpec) => `${m.provider}/${m.name}`;

/**
 * Calls `model`, then each fallback in turn, for failures before any output reached the caller. Each model gets
 * retries with backoff that honour retry-after. A stream that dies after output was shown is retried on the same
 * model with `discardOutput: true` (clients drop that iteration's deltas); it never falls back silently.
 *
 * The first attempt runs without a frame of this chain's loop: a call waits seconds, thousands at once, and most
 * succeed at once (docs/BENCHMARKS.md, "Capacity"); the loop takes over from its failure.
 */
export function callModelChain(
  registry: ProviderRegistry,
  chain: readonly ModelSpec[],
  req: Omit<ModelCallRequest, 'model'>,
  hooks: ChainHooks = {},
  opts: ChainOptions = {},
): Promise<ModelResponse> {
  if (!chain.length) return Promise.reject(new LlmError('config', 'no model to call'));
  const t0 = performance.now();
  return attempt(registry, chain[0]!, req, hooks, opts, t0).catch((e: unknown) =>
    retrying(registry, chain, req, hooks, opts, { e, t0 }),
  );
}

/** One call of `spec` (through the strategy and the gate), its success reported to onAttempt; a failure rejects. */
function attempt(
  registry: ProviderRegistry,
  spec: ModelSpec,
  req: Omit<ModelCallRequest, 'model'>,
  hooks: ChainHooks,
  opts: ChainOptions,
  t0: number,
): Promise<ModelResponse> {
  try {
    const client = registry.clientFor(spec);
    const call = (opts.strategy ?? functionCalling).begin({ ...req, model: spec });
    return admitted(opts.gate, spec.provider, req.signal, () => client.call(call.request)).then((r) => {
      const res = call.finish(r);
      hooks.onAttempt?.({
        provider: spec.provider,
        model: spec.name,
        outcome: 'ok',
        seconds: (performance.now() - t0) / 1000,
      });
      return res;
    });
  } catch (e) {
    return Promise.reject(e);
  }
}

/** The chain from the first attempt's failure on: its retries, then the fallbacks and theirs. */
async function retrying(
  registry: ProviderRegistry,
  chain: readonly ModelSpec[],
  req: Omit<ModelCallRequest, 'model'>,
  hooks: ChainHooks,
  opts: ChainOptions,
  first: { e: unknown; t0: number },
): Promise<ModelResponse> {
  const attempts = opts.attemptsPerModel ?? 3;
  const base = opts.baseDelayMs ?? 500;
  const maxDelay = opts.maxDelayMs ?? 30_000;
  const sleep = opts.sleep ?? abortableSleep;
  let failed: { e: unknown; t0: number } | null = first;
  let lastError: LlmError | null = null;
  for (let m = 0; m < chain.length; m++) {
    const spec = chain[m]!;
    if (m > 0 && lastError)
      await hooks.onFallback?.({ from: label(chain[m - 1]!), to: label(spec), reason: lastError.kind });
    for (let n = 1; n <= attempts; n++) {
      if (!failed) {
        const t0 = performance.now();
        try {
          return await attempt(registry, spec, req, hooks, opts, t0);
        } catch (e) {
          failed = { e, t0 };
        }
      }
      const { e, t0 } = failed;
      failed = null;
      const err =
        e instanceof LlmError ? e : new LlmError('network', e instanceof Error ? e.message : String(e), { cause: e });
      // held back by our own per-provider limit: not the provider's failure, so no retry here and no fallback
      if (err.opts.throttled) throw err;
      hooks.onAttempt?.({
        provider: spec.provider,
        model: spec.name,
        outcome: 'error',
        seconds: (performance.now() - t0) / 1000,
      });
      // aborted: the caller stopped; context_length: the caller must shrink the context; content_filter: the
      // provider refused the content itself — another model is no answer to that
      if (err.kind === 'aborted' || err.kind === 'context_length' || err.kind === 'content_filter') throw err;
      lastError = err;
      const canRetry = err.retryable && n < attempts && (err.opts.retryAfterMs ?? 0) <= maxDelay;
      if (!canRetry) {
        if (err.opts.outputStarted) throw err; // output was shown: no silent fallback
        break;
      }
      const delayMs = err.opts.retryAfterMs ?? Math.min(maxDelay, base * 2 ** (n - 1) * (0.75 + Math.random() * 0.5));
      await hooks.onRetry?.({
        provider: spec.provider,
        model: spec.name,
        attempt: n + 1,
        reason: reasonOf(err),
        discardOutput: !!err.opts.outputStarted,
        delayMs,
      });
      await sleep(delayMs, req.signal);
    }
  }
  throw lastError ?? new LlmError('config', 'no model to call');
}

/** Runs one provider call inside the gate's admission; the slot is released as soon as the call settles. */
async function admitted<T>(
  gate: ProviderGate | undefined,
  provider: string,
  signal: AbortSignal | undefined,
  fn: () => Promise<T>,
): Promise<T> {
  if (!gate) return fn();
  const release = await gate.acquire(provider, signal);
  try {
    return await fn();
  } finally {
    await release().catch(() => {}); // a lost release only lowers capacity until its lease expires
  }
}

function reasonOf(err: LlmError): string {
  return err.opts.status ? `${err.kind} (HTTP ${err.opts.status})` : err.kind;
}

export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new LlmError('aborted', 'aborted'));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new LlmError('aborted', 'aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
