import {
  CancelRunResponseSchema,
  CreateRunResponseSchema,
  DecisionResponseSchema,
  RunListPageSchema,
  RunSnapshotSchema,
  RunWebhooksResponseSchema,
  isTerminalStatus,
  type CancelRunResponse,
  type CreateRunResponse,
  type DecisionInput,
  type DecisionResponse,
  type EventEnvelope,
  type RunListPage,
  type RunRequestInput,
  type RunSnapshot,
  type RunStatus,
  type WebhookDeliveryInfo,
} from '@agentloop/protocol';
import { followRun, type FollowOptions } from './follow-run.js';
import type { HttpTransport, RequestOptions } from './http-transport.js';

/** What `GET /v1/runs/:id` may add to the snapshot: the transcript the model sees next, or every message ever. */
export type RunInclude = 'messages' | 'history';

export interface ListRunsQuery extends RequestOptions {
  status?: RunStatus;
  /** Runs per page, 1..200 [server: 50]. */
  limit?: number;
  /** Start after this page (a `nextCursor` seen before) instead of at the newest run. */
  cursor?: string;
}

/** Following a run's events: where to start, and how long to keep reconnecting a lost stream (followRun). */
export type EventsOptions = Omit<FollowOptions, 'headers' | 'fetch'>;

// messages are not checked: a transcript can be large, and it is stored as the server validated it
const SnapshotWithMessages = RunSnapshotSchema.omit({ messages: true, history: true });
const id = (runId: string) => `/v1/runs/${encodeURIComponent(runId)}`;

/** `client.runs`: every endpoint of one run and of the run list (SPEC §2, §4, §5). */
export class RunsApi {
  /** @internal `client.runs` is made by AgentloopClient. */
  constructor(private readonly http: HttpTransport) {}

  /** `POST /v1/runs`. The same `idempotencyKey` (per tenant, 24 h) returns the same run; with another body it is 422. */
  create(
    request: RunRequestInput,
    opts: RequestOptions & { idempotencyKey?: string } = {},
  ): Promise<CreateRunResponse> {
    const headers: Record<string, string> = opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {};
    return this.http.json('POST', '/v1/runs', CreateRunResponseSchema, { body: request, headers, signal: opts.signal });
  }

  /** `GET /v1/runs/:id`, with the transcript (`messages`) and/or every message ever appended (`history`). */
  get(runId: string, opts: RequestOptions & { include?: RunInclude | RunInclude[] } = {}): Promise<RunSnapshot> {
    const include = [opts.include ?? []].flat().join(',') || undefined;
    return this.http.json('GET', id(runId), SnapshotWithMessages, { query: { include }, signal: opts.signal });
  }

  /**
   * `GET /v1/runs`, the tenant's runs newest first, a page at a time: iterating follows `nextCursor` to the last page.
   * `for await (const page of client.runs.list({ status: 'paused' })) for (const run of page.data) ...`
   */
  async *list(query: ListRunsQuery = {}): AsyncGenerator<RunListPage> {
    let cursor = query.cursor;
    do {
      const page = await this.http.json('GET', '/v1/runs', RunListPageSchema, {
        query: { status: query.status, limit: query.limit, cursor },
        signal: query.signal,
      });
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  /**
   * `GET /v1/runs/:id/events`: the run's events after `after` (replayed, then live), each once, in order, until its
   * terminal event. A lost stream is reconnected with `Last-Event-ID` and backoff; see FollowOptions for the bounds
   * (then FollowError). A final HTTP answer (401, 404) throws AgentloopError. Events of types this client does not
   * know are yielded too: ignore what you do not handle.
   */
  events(runId: string, opts: EventsOptions = {}): AsyncGenerator<EventEnvelope> {
    return followRun(this.http.url(`${id(runId)}/events`), {
      ...opts,
      headers: this.http.headers(),
      fetch: this.http.fetch,
    });
  }

  /** The run's snapshot once it has ended (completed, failed or cancelled): its events followed to the last one. */
  async wait(runId: string, opts: EventsOptions = {}): Promise<RunSnapshot> {
    const signal = opts.signal ? { signal: opts.signal } : {};
    const now = await this.get(runId, signal);
    if (isTerminalStatus(now.status)) return now;
    for await (const _ of this.events(runId, opts));
    return this.get(runId, signal);
  }

  /** `POST /v1/runs/:id/decisions` (SPEC §5): applied whole or not at all (409 when a call is not pending). */
  decide(runId: string, decisions: DecisionInput[], opts: RequestOptions = {}): Promise<DecisionResponse> {
    return this.http.json('POST', `${id(runId)}/decisions`, DecisionResponseSchema, {
      body: { decisions },
      signal: opts.signal,
    });
  }

  /** Approves a paused call, with edited `arguments` when given (validated again by the server: 400 if they fail). */
  approve(
    runId: string,
    callId: string,
    opts: RequestOptions & { arguments?: Record<string, unknown> } = {},
  ): Promise<DecisionResponse> {
    return this.decide(
      runId,
      [{ callId, action: 'approve', ...(opts.arguments ? { arguments: opts.arguments } : {}) }],
      opts,
    );
  }

  /** Denies a paused call; the model sees the reason. */
  deny(runId: string, callId: string, opts: RequestOptions & { reason?: string } = {}): Promise<DecisionResponse> {
    return this.decide(
      runId,
      [{ callId, action: 'deny', ...(opts.reason !== undefined ? { reason: opts.reason } : {}) }],
      opts,
    );
  }

  /** Answers a client tool's call (`requires_client_execution`) with its result, or an error when `isError`. */
  submitResult(
    runId: string,
    callId: string,
    result: unknown,
    opts: RequestOptions & { isError?: boolean } = {},
  ): Promise<DecisionResponse> {
    return this.decide(runId, [{ callId, action: 'submit_result', result, isError: opts.isError ?? false }], opts);
  }

  /** `POST /v1/runs/:id/cancel`: `cancelled` at once for a queued or paused run, else `cancelling`; 409 once it ended. */
  cancel(runId: string, opts: RequestOptions = {}): Promise<CancelRunResponse> {
    return this.http.json('POST', `${id(runId)}/cancel`, CancelRunResponseSchema, { signal: opts.signal });
  }

  /** `GET /v1/runs/:id/webhooks`: the run's webhook deliveries, oldest first. */
  async webhooks(runId: string, opts: RequestOptions = {}): Promise<WebhookDeliveryInfo[]> {
    return (await this.http.json('GET', `${id(runId)}/webhooks`, RunWebhooksResponseSchema, { signal: opts.signal }))
      .data;
  }
}
