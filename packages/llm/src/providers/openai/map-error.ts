import OpenAI from 'openai';
import { LlmError } from '../../types.js';

/** Retry delay the server asked for: `retry-after-ms`, then `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: Headers | Record<string, string> | undefined | null): number | undefined {
  if (!headers) return undefined;
  const get = (k: string) => (headers instanceof Headers ? headers.get(k) : (headers[k] ?? null));
  const ms = Number(get('retry-after-ms'));
  if (get('retry-after-ms') && Number.isFinite(ms) && ms >= 0) return ms;
  const ra = get('retry-after');
  if (ra) {
    const s = Number(ra);
    if (Number.isFinite(s) && s >= 0) return s * 1000;
    const at = Date.parse(ra);
    if (!Number.isNaN(at)) return Math.max(0, at - Date.now());
  }
  return undefined;
}

export function mapOpenAIError(err: unknown, outputStarted: boolean): LlmError {
  if (err instanceof LlmError) return err;
  if (err instanceof OpenAI.APIUserAbortError)
    return new LlmError('aborted', 'request aborted', { outputStarted, cause: err });
  if (err instanceof OpenAI.APIConnectionTimeoutError)
    return new LlmError('timeout', 'model request timed out', { outputStarted, cause: err });
  if (err instanceof OpenAI.APIConnectionError)
    return new LlmError('network', `connection error: ${err.message}`, { outputStarted, cause: err });
  if (err instanceof OpenAI.APIError) {
    const status = err.status;
    const code = (err.code ?? (err.error as { code?: string } | undefined)?.code) as string | undefined;
    const retryAfter = retryAfterMs(err.headers as Headers | undefined);
    const opts = { status, retryAfterMs: retryAfter, outputStarted, cause: err };
    if (code === 'context_length_exceeded' || /maximum context length/i.test(err.message))
      return new LlmError('context_length', err.message, opts);
    if (status === 429) return new LlmError('rate_limit', err.message, opts);
    if (status === 401 || status === 403) return new LlmError('auth', err.message, opts);
    if (status === 408) return new LlmError('timeout', err.message, opts);
    if (status !== undefined && status >= 500) return new LlmError('server', err.message, opts);
    if (status === undefined) return new LlmError('network', err.message, opts);
    return new LlmError('invalid_request', err.message, opts);
  }
  if (err instanceof Error && err.name === 'AbortError')
    return new LlmError('aborted', 'request aborted', { outputStarted, cause: err });
  const message = err instanceof Error ? err.message : String(err);
  return new LlmError('network', `stream failed: ${message}`, { outputStarted, cause: err });
}
