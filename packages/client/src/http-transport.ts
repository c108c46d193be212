import type { z } from 'zod';
import { AgentloopError, errorOf } from './api-error.js';

export interface ClientOptions {
  /** Where the api role listens, e.g. `http://127.0.0.1:8080` (paths start with `/v1`). */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` (never in a URL); none for a server with `AGENTLOOP_AUTH=disabled`. */
  apiKey?: string | null;
  /** Sent on every request, e.g. a tracing header. */
  headers?: Record<string, string>;
  /** A fetch of your own (tests, proxies) [globalThis.fetch]. */
  fetch?: typeof fetch;
}

/** Per request: aborting it rejects the call with the signal's reason. */
export interface RequestOptions {
  signal?: AbortSignal;
}

type Query = Record<string, string | number | undefined>;

/** How the client talks to the API: URLs, the key, JSON in and out, errors as AgentloopError, answers checked. */
export class HttpTransport {
  readonly baseUrl: string;
  readonly fetch: typeof fetch;

  constructor(private readonly opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/+$/, '');
    this.fetch = opts.fetch ?? globalThis.fetch.bind(globalThis);
  }

  url(path: string, query: Query = {}): string {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, String(v));
    return `${this.baseUrl}${path}${params.size ? `?${params}` : ''}`;
  }

  /** Every request's headers: the caller's, then the key. */
  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      ...this.opts.headers,
      ...(this.opts.apiKey ? { authorization: `Bearer ${this.opts.apiKey}` } : {}),
      ...extra,
    };
  }

  /**
   * One JSON request. A non-2xx answer throws its AgentloopError; no answer throws one with status 0
   * (`network_error`); a 2xx body is checked against `schema` and returned as sent (fields a newer server adds kept).
   */
  async json<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    init: RequestOptions & { query?: Query; body?: unknown; headers?: Record<string, string> } = {},
  ): Promise<z.output<S>> {
    const url = this.url(path, init.query);
    let res: Response;
    try {
      res = await this.fetch(url, {
        method,
        headers: this.headers({
          accept: 'application/json',
          ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...init.headers,
        }),
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
        ...(init.signal ? { signal: init.signal } : {}),
      });
    } catch (err) {
      if (init.signal?.aborted) throw init.signal.reason;
      throw new AgentloopError(
        0,
        'network_error',
        `${method} ${url}: no answer (${errorWithCause(err)})`,
        undefined,
        undefined,
        { cause: err },
      );
    }
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new AgentloopError(
        res.status,
        'invalid_response',
        `${method} ${path}: the answer is not JSON: ${text.slice(0, 200)}`,
      );
    }
    return checked(schema, body, res.status, `${method} ${path}`);
  }
}

/** `value` when it has the shape `schema` describes (returned as it is: unknown fields kept); else invalid_response. */
export function checked<S extends z.ZodType>(schema: S, value: unknown, status: number, what: string): z.output<S> {
  const r = schema.safeParse(value);
  if (!r.success)
    throw new AgentloopError(
      status,
      'invalid_response',
      `${what}: the answer does not have the shape the API promises`,
      r.error.issues,
    );
  return value as z.output<S>;
}

/** An error's message and, when it says more, its cause's (fetch's "fetch failed" hides the reason there). */
export function errorWithCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : '';
  return cause && cause !== err.message ? `${err.message}: ${cause}` : err.message;
}
