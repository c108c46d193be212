/**
 * The codes of SPEC §2's error body, and the client's own: `http_error` (a non-2xx answer without the SPEC's error
 * body, e.g. from a proxy), `invalid_response` (a 2xx answer that is not the shape the API promises) and
 * `network_error` (no answer at all: status 0).
 */
export type AgentloopErrorCode =
  | 'invalid_request'
  | 'unauthorized'
  | 'not_found'
  | 'conflict'
  | 'payload_too_large'
  | 'idempotency_mismatch'
  | 'rate_limited'
  | 'internal'
  | 'http_error'
  | 'invalid_response'
  | 'network_error'
  | (string & {});

/** Answers worth asking again (a restarting api, a proxy in front of it, a rate limit); any other is final. */
export const RETRYABLE_STATUS: ReadonlySet<number> = new Set([408, 425, 429, 500, 502, 503, 504]);

/** A request the API refused, or that got no usable answer: the SPEC §2 error body, typed. */
export class AgentloopError extends Error {
  constructor(
    /** The HTTP status; 0 when no answer arrived. */
    readonly status: number,
    readonly code: AgentloopErrorCode,
    message: string,
    /** `details` of the error body (for `invalid_request`: the zod issues, each with its `path`). */
    readonly details?: unknown,
    /** From the `Retry-After` header (429, 503): how long to wait before asking again. */
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AgentloopError';
  }

  /** Whether the same request may succeed later: no answer, a timeout, a rate limit or a server error. */
  get retryable(): boolean {
    return this.status === 0 || RETRYABLE_STATUS.has(this.status);
  }
}

/** The AgentloopError of a non-2xx response (its body read; a body that is not the SPEC's error shape still gives one). */
export async function errorOf(res: Response): Promise<AgentloopError> {
  const text = await res.text().catch(() => '');
  let err: { code?: unknown; message?: unknown; details?: unknown } = {};
  try {
    const parsed = JSON.parse(text) as { error?: typeof err } | null;
    if (parsed && typeof parsed.error === 'object' && parsed.error) err = parsed.error;
  } catch {}
  const code = typeof err.code === 'string' ? err.code : 'http_error';
  const message =
    typeof err.message === 'string'
      ? err.message
      : `HTTP ${res.status}${text && code === 'http_error' ? `: ${text.slice(0, 200)}` : ''}`;
  return new AgentloopError(res.status, code, message, err.details, retryAfterMs(res.headers.get('retry-after')));
}

/** `Retry-After` is seconds or an HTTP date (RFC 9110 §10.2.3). */
function retryAfterMs(header: string | null): number | undefined {
  if (!header) return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}
