import type { EventEnvelope, RunRequestInput, RunSnapshot } from '@agentloop/protocol';
import { errorOf } from './api-error.js';
import { followRun, type FollowOptions } from './follow-run.js';

export interface Decision {
  callId: string;
  action: 'approve' | 'deny' | 'submit_result';
  arguments?: Record<string, unknown>;
  reason?: string;
  result?: unknown;
  isError?: boolean;
}

/**
 * The HTTP API (SPEC §2) for backends, the CLI and browsers: global fetch only. Errors are thrown as AgentloopError;
 * `events` follows a run's SSE stream to its terminal event, reconnecting from the last event it saw.
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

  /**
   * The run's events after `after` (replayed, then live) until its terminal event, each once; a dropped stream is
   * reconnected with Last-Event-ID (followRun: backoff, then FollowError when it cannot be got back).
   */
  events(id: string, opts: Omit<FollowOptions, 'headers' | 'fetch'> = {}): AsyncGenerator<EventEnvelope> {
    return followRun(`${this.baseUrl}/v1/runs/${encodeURIComponent(id)}/events`, { ...opts, headers: this.auth(), fetch: this.fetchImpl });
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
