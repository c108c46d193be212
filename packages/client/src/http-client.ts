import type { EventEnvelope, RunRequestInput, RunSnapshot } from '@agentloop/protocol';
import { sseFrames } from './sse.js';

/** A non-2xx answer of the API, with its SPEC §2 error body. */
export class AgentloopError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'AgentloopError';
  }
}

export interface Decision {
  callId: string;
  action: 'approve' | 'deny' | 'submit_result';
  arguments?: Record<string, unknown>;
  reason?: string;
  result?: unknown;
  isError?: boolean;
}

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * The HTTP API (SPEC §2) for backends, the CLI and browsers: global fetch only. Errors are thrown as AgentloopError;
 * `events` follows a run's SSE stream to its terminal event, reconnecting from the last seq it saw.
 */
export class AgentloopClient {
  constructor(
    readonly baseUrl: string,
    private readonly key: string | null = null,
    private readonly fetchImpl: typeof fetch = globalThis.fetch.bind(globalThis),
  ) {}

  createRun(request: RunRequestInput, opts: { idempotencyKey?: string } = {}): Promise<{ id: string; status: string; eventsUrl: string }> {
    return this.json('POST', '/v1/runs', request, opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {});
  }

  getRun(id: string, include?: 'messages' | 'history'): Promise<RunSnapshot> {
    return this.json('GET', `/v1/runs/${encodeURIComponent(id)}${include ? `?include=${include}` : ''}`);
  }

  listRuns(q: { status?: RunSnapshot['status']; limit?: number; cursor?: string } = {}): Promise<{ data: RunSnapshot[]; nextCursor: string | null }> {
    const params = new URLSearchParams(Object.entries(q).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    return this.json('GET', `/v1/runs${params.size ? `?${params}` : ''}`);
  }

  decide(id: string, decisions: Decision[]): Promise<{ status: 'resumed' | 'waiting'; remaining: string[] }> {
    return this.json('POST', `/v1/runs/${encodeURIComponent(id)}/decisions`, { decisions });
  }

  cancel(id: string): Promise<unknown> {
    return this.json('POST', `/v1/runs/${encodeURIComponent(id)}/cancel`);
  }

  tools(): Promise<{ data: Array<{ name: string; description: string; parameters: unknown; sideEffect: string; pool: string }> }> {
    return this.json('GET', '/v1/tools');
  }

  /** The run's events after `after` (replayed, then live) until its terminal event; reconnects after a dropped stream. */
  async *events(id: string, opts: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<EventEnvelope> {
    let after = opts.after ?? 0;
    for (let drops = 0; ; ) {
      const res = await this.fetchImpl(`${this.baseUrl}/v1/runs/${encodeURIComponent(id)}/events?after=${after}`, { headers: { ...this.auth(), accept: 'text/event-stream' }, signal: opts.signal });
      if (res.status === 204) return; // the replay point is at or past the terminal event
      if (!res.ok || !res.body) throw await errorOf(res);
      try {
        for await (const frame of sseFrames(res.body as unknown as AsyncIterable<Uint8Array>)) {
          const e = JSON.parse(frame.data) as EventEnvelope;
          after = e.seq;
          yield e;
          if (TERMINAL.has(e.type)) return;
        }
      } catch (err) {
        if (opts.signal?.aborted || ++drops > 5) throw err;
      }
    }
  }

  private auth(): Record<string, string> {
    return this.key ? { authorization: `Bearer ${this.key}` } : {};
  }

  private async json<T>(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<T> {
    const res = await this.fetchImpl(`${this.baseUrl}${path}`, {
      method,
      headers: { ...this.auth(), ...headers, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    if (!res.ok) throw await errorOf(res);
    return (await res.json()) as T;
  }
}

async function errorOf(res: Response): Promise<AgentloopError> {
  const text = await res.text().catch(() => '');
  let err: { code?: string; message?: string; details?: unknown } = {};
  try {
    err = (JSON.parse(text) as { error?: typeof err }).error ?? {};
  } catch {}
  const retry = Number(res.headers.get('retry-after'));
  return new AgentloopError(res.status, err.code ?? 'http_error', err.message ?? `HTTP ${res.status}`, err.details, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}
