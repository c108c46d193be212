import OpenAI from 'openai';
import { LlmError, type LlmErrorKind } from '../../../types.js';
import { mapOpenAIError } from '../map-error.js';

/** An error code a Responses stream reports (`error` event, `response.failed`) → the kind of failure it is. */
function kindOf(code: string): LlmErrorKind {
  if (code === 'context_length_exceeded') return 'context_length';
  if (code === 'rate_limit_exceeded' || code === 'insufficient_quota' || code.includes('rate_limit'))
    return 'rate_limit';
  if (code === 'invalid_prompt' || code === 'content_filter' || code.includes('content_policy'))
    return 'content_filter';
  if (code === 'invalid_api_key' || code === 'unauthorized') return 'auth';
  if (code.startsWith('invalid_') || code === 'unsupported_parameter' || code === 'unknown_parameter')
    return 'invalid_request';
  return 'server'; // server_error, server_is_overloaded, and codes this build does not know: the response failed on their side
}

/** A failure reported inside a Responses stream (its code may be null: then the server failed). */
export function streamFailure(code: string | null | undefined, message: string, outputStarted: boolean): LlmError {
  return new LlmError(kindOf(code ?? ''), code ? `${message} (${code})` : message, { outputStarted });
}

/**
 * An exception from a Responses call. The SDK throws an `error` event of the stream as an APIError without a status:
 * it is classified by its code; everything else as for Chat Completions (429 with retry-after, 5xx, 401/403,
 * context_length_exceeded, network, abort).
 */
export function mapResponsesError(err: unknown, outputStarted: boolean): LlmError {
  if (
    err instanceof OpenAI.APIError &&
    err.status === undefined &&
    !(err instanceof OpenAI.APIConnectionError) &&
    !(err instanceof OpenAI.APIUserAbortError)
  ) {
    const body = err.error as { code?: unknown; message?: unknown } | undefined;
    const code = typeof err.code === 'string' ? err.code : typeof body?.code === 'string' ? body.code : null;
    const message = typeof body?.message === 'string' ? body.message : err.message;
    const e = streamFailure(code, message, outputStarted);
    return new LlmError(e.kind, e.message, { outputStarted, cause: err });
  }
  return mapOpenAIError(err, outputStarted);
}

/**
 * Whether an error says the endpoint has no Responses API (an OpenAI-compatible server with Chat Completions only):
 * a 404 that is not OpenAI's "model not found".
 */
export function isMissingResponsesApi(err: unknown): boolean {
  if (!(err instanceof OpenAI.APIError) || err.status !== 404) return false;
  const body = err.error as { code?: unknown } | undefined;
  const code = typeof err.code === 'string' ? err.code : typeof body?.code === 'string' ? body.code : null;
  return code !== 'model_not_found' && !/model .* does not exist/i.test(err.message);
}
