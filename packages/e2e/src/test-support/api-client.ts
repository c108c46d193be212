import type { EventEnvelope, RunSnapshot } from '@agentloop/protocol';
import { sseFrames } from '@agentloop/client';

export interface HttpResult<T = any> {
  status: number;
  json: T;
  text: string;
  headers: Headers;
}

/** A small HTTP client of the /v1 API for tests. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    readonly key: string | null,
  ) {}

  async request<T = any>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<HttpResult<T>> {
    const h: Record<string, string> = { ...headers };
    if (this.key) h.authorization = `Bearer ${this.key}`;
    let payload: string | undefined;
    if (body !== undefined) {
      payload = typeof body === 'string' ? body : JSON.stringify(body);
      h['content-type'] ??= 'application/json';
    }
    const res = await fetch(`${this.baseUrl}${path}`, { method, headers: h, body: payload });
    const text = await res.text();
    let json: any = null;
    try {
      json = JSON.parse(text);
    } catch {}
    return { status: res.status, json, text, headers: res.headers };
  }

  createRun(body: unknown, headers: Record<string, string> = {}) {
    return this.request('POST', '/v1/runs', body, headers);
  }

  async startRun(body: unknown): Promise<string> {
    const r = await this.createRun(body);
    if (r.status !== 202) throw new Error(`POST /v1/runs: ${r.status} ${r.text}`);
    return r.json.id;
  }

  getRun(id: string, include?: string) {
    return this.request<RunSnapshot>('GET', `/v1/runs/${id}${include ? `?include=${include}` : ''}`);
  }

  cancel(id: string) {
    return this.request('POST', `/v1/runs/${id}/cancel`);
  }

  async waitFor(id: string, pred: (s: RunSnapshot) => boolean, timeoutMs = 30_000): Promise<RunSnapshot> {
    const t0 = Date.now();
    for (;;) {
      const r = await this.getRun(id);
      if (r.status === 200 && pred(r.json)) return r.json;
      if (Date.now() - t0 > timeoutMs)
        throw new Error(
          `run ${id} did not reach the expected state in ${timeoutMs} ms (last: ${r.text.slice(0, 300)})`,
        );
      await new Promise((res) => setTimeout(res, 50));
    }
  }

  waitTerminal(id: string, timeoutMs = 30_000) {
    return this.waitFor(id, (s) => ['completed', 'failed', 'cancelled'].includes(s.status), timeoutMs);
  }

  /** Reads SSE frames until the server closes the stream (or maxEvents / timeout; a timeout before the response headers gives status 0 and no events). */
  async events(
    id: string,
    opts: { after?: number; lastEventId?: number; maxEvents?: number; timeoutMs?: number } = {},
  ): Promise<{ status: number; events: EventEnvelope[]; ids: number[]; closed: boolean }> {
    const headers: Record<string, string> = { accept: 'text/event-stream' };
    if (this.key) headers.authorization = `Bearer ${this.key}`;
    if (opts.lastEventId !== undefined) headers['last-event-id'] = String(opts.lastEventId);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), opts.timeoutMs ?? 20_000);
    const events: EventEnvelope[] = [];
    const ids: number[] = [];
    let closed = false;
    let res: Response;
    try {
      res = await fetch(
        `${this.baseUrl}/v1/runs/${id}/events${opts.after !== undefined ? `?after=${opts.after}` : ''}`,
        { headers, signal: ac.signal },
      );
    } catch (err) {
      clearTimeout(timer);
      // the timeout fired before the response headers came (a slow server): no status, no events; a poller tries again
      if (ac.signal.aborted) return { status: 0, events, ids, closed };
      throw err;
    }
    if (res.status !== 200 || !res.body) {
      clearTimeout(timer);
      return { status: res.status, events, ids, closed };
    }
    try {
      for await (const frame of sseFrames(res.body as unknown as AsyncIterable<Uint8Array>)) {
        events.push(JSON.parse(frame.data));
        if (frame.id !== null) ids.push(Number(frame.id));
        if (opts.maxEvents && events.length >= opts.maxEvents) {
          ac.abort();
          return { status: 200, events, ids, closed: false };
        }
      }
      closed = true;
    } catch {
      // aborted (timeout or maxEvents)
    } finally {
      clearTimeout(timer);
    }
    return { status: 200, events, ids, closed };
  }
}
