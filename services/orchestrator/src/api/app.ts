import express, { type NextFunction, type Request, type Response } from 'express';
import { DecisionRequestSchema, MAX_JSON_DEPTH, RunStatusSchema, SAFE_CALL_ID_RE, ThreadIdSchema, argumentsForDisplay, isTerminalStatus, textJsonDepth } from '@agentloop/protocol';
import { readyzAnswer, toSnapshot, type EventHub, type ListCursor, type Logger, type Metrics, type RunStore, type TenantLimiter, type ThreadStore, type ToolCatalog } from '@agentloop/runtime';
import type { RunIntake } from '../intake.js';
import type { DecisionService } from '../decisions/decision-service.js';
import { zodIssues } from '../intake.js';
import { ApiError, sendError } from './errors.js';
import { openApiDocument } from './openapi.js';
import { ADMIN_PATH } from './admin.js';
import { streamEvents, type ServerEventStreams } from './sse.js';
import { corsMiddleware } from './cors.js';
import { CONSOLE_PATH, consoleRouter, type ConsoleOptions } from './console.js';

export interface ApiDeps {
  store: RunStore;
  decisions: DecisionService;
  intake: RunIntake;
  hub: EventHub;
  catalog: ToolCatalog;
  logger: Logger;
  apiKeys: Map<string, string>;
  authRequired: boolean;
  metricsText: () => Promise<string>;
  /** Of metricsText (OpenMetrics when exemplars are on) [Prometheus text 0.0.4]. */
  metricsContentType?: string;
  /** Why the process is not ready (null: ready; notReadyReason). Must answer at once, also while Redis is away. */
  ready: () => Promise<string | null>;
  /** Bull Board (mounted at /admin/queues when an admin key is configured). */
  admin?: express.Router;
  /** Broadcast a cancellation so the process holding the run's step aborts it. */
  publishCancel: (runId: string) => Promise<void>;
  /** AGENTLOOP_TENANT_LIMITS (requests per second, open streams); null when no tenant has limits. */
  limiter?: TenantLimiter | null;
  metrics?: Metrics;
  threads: ThreadStore;
  /** The server's event streams, ended by its shutdown. */
  eventStreams?: ServerEventStreams;
  /** AGENTLOOP_CORS_ORIGINS: browser origins allowed to call the API (none: no CORS headers at all). */
  corsOrigins?: readonly string[];
  /** The web console at /console (its built directory, its trace link); false: not served. */
  console?: ConsoleOptions | false;
}

/** The 401 of a server started with AGENTLOOP_AUTH=required and no AGENTLOOP_API_KEYS. */
export const NO_API_KEYS_MESSAGE =
  'no API keys are configured on the server (AGENTLOOP_API_KEYS is empty and AGENTLOOP_AUTH is required), so every request is refused: the operator must set AGENTLOOP_API_KEYS=key=tenant,...';

/** Listing cursors are the last run returned: `<createdAt ms>.<run id>`. */
const CURSOR_RE = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/;
const encodeCursor = (c: ListCursor) => `${c.score}.${c.runId}`;

type Authed = Request & { tenant?: string };

/** An async handler; `passThrough`: a middleware that calls next() when it resolves. */
const wrap = (fn: (req: Authed, res: Response) => Promise<void>, passThrough = false) => (req: Request, res: Response, next: NextFunction) => {
  fn(req as Authed, res).then(() => passThrough && next(), next);
};

/** Media types a JSON body may be sent as (none at all is accepted too). */
const JSON_MEDIA_TYPE = /^\s*(application\/(json|[\w.-]+\+json)|text\/plain)\s*(;|$)/i;

/** Parses a JSON body read as text: depth-limited before parsing, 400 on malformed JSON. */
function jsonBody(req: Request): unknown {
  const type = req.get('content-type');
  if (type !== undefined && !JSON_MEDIA_TYPE.test(type)) throw new ApiError('invalid_request', 'unsupported media type: send the body as application/json');
  const text = typeof req.body === 'string' ? req.body : '';
  if (text.trim() === '') throw new ApiError('invalid_request', 'the request body must be a JSON object');
  if (textJsonDepth(text) > MAX_JSON_DEPTH) throw new ApiError('invalid_request', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ApiError('invalid_request', `malformed JSON: ${(e as Error).message}`);
  }
}

export function createApp(d: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const body = express.text({ type: () => true, limit: '1mb' });
  if (d.corsOrigins?.length) app.use(corsMiddleware(d.corsOrigins));

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', wrap(async (_req, res) => {
    const answer = readyzAnswer(await d.ready().catch((e: unknown) => String(e)));
    res.status(answer.status).json(answer.body);
  }));
  app.get('/metrics', wrap(async (_req, res) => {
    res.type(d.metricsContentType ?? 'text/plain; version=0.0.4').send(await d.metricsText());
  }));
  app.get('/v1/openapi.json', (_req, res) => void res.json(openApiDocument()));
  if (d.admin) app.use(ADMIN_PATH, d.admin);
  if (d.console !== false) app.use(CONSOLE_PATH, consoleRouter(d.console));

  app.use('/v1', (req: Authed, _res, next) => {
    if (!d.authRequired) {
      req.tenant = 'default';
      return next();
    }
    // without keys every request fails: say why, or the operator sees only 401s
    if (d.apiKeys.size === 0) return next(new ApiError('unauthorized', NO_API_KEYS_MESSAGE));
    const m = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '');
    const tenant = m ? d.apiKeys.get(m[1]!.trim()) : undefined;
    if (!tenant) return next(new ApiError('unauthorized', m ? 'unknown API key' : 'missing Authorization: Bearer <key>'));
    req.tenant = tenant;
    next();
  });

  // tenant request rate (AGENTLOOP_TENANT_LIMITS): one Redis round trip, only for tenants with a rate
  if (d.limiter)
    app.use('/v1', wrap(async (req, res) => {
      const admitted = await d.limiter!.admitRequest(req.tenant!);
      if (!admitted.ok) {
        d.metrics?.rateLimited.inc({ limit: 'requests' });
        res.set('retry-after', String(Math.max(1, Math.ceil(admitted.retryAfterMs / 1000))));
        throw new ApiError('rate_limited', 'too many requests for this tenant (AGENTLOOP_TENANT_LIMITS requestsPerSecond)');
      }
    }, true));

  const ownRun = async (req: Authed) => {
    const st = await d.store.load(String(req.params.id));
    if (!st || st.tenant !== req.tenant) throw new ApiError('not_found', `run ${req.params.id} not found`);
    return st;
  };
  const created = (id: string, status: string) => ({ id, status, eventsUrl: `/v1/runs/${id}/events` });

  app.post('/v1/runs', body, wrap(async (req, res) => {
    const payload = jsonBody(req);
    const key = req.get('idempotency-key') ?? undefined;
    if (key !== undefined && (key.length === 0 || key.length > 255)) throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 characters');
    const r = await d.intake.create(req.tenant!, payload, { idempotencyKey: key });
    switch (r.kind) {
      case 'invalid':
        throw new ApiError('invalid_request', r.message, r.issues);
      case 'mismatch':
        throw new ApiError('idempotency_mismatch', 'this Idempotency-Key was used with a different request body');
      case 'existing':
        res.status(200).json(created(r.runId, r.status));
        return;
      case 'limited':
        res.set('retry-after', '1');
        throw new ApiError('rate_limited', `the tenant has ${r.activeRuns} active runs, its activeRuns limit (AGENTLOOP_TENANT_LIMITS)`);
      case 'thread_busy':
        throw new ApiError('conflict', `the thread has an active run (${r.activeRunId}); threadPolicy "enqueue" queues behind it, "interrupt" cancels it`);
      case 'created':
        res.status(202).location(`/v1/runs/${r.runId}`).json(created(r.runId, 'queued'));
    }
  }));

  app.get('/v1/threads/:id', wrap(async (req, res) => {
    const id = ThreadIdSchema.safeParse(req.params.id);
    const thread = id.success ? await d.threads.get(req.tenant!, id.data) : null;
    if (!thread) throw new ApiError('not_found', `thread ${String(req.params.id).slice(0, 128)} not found`);
    res.json(thread);
  }));

  app.get('/v1/runs', wrap(async (req, res) => {
    const status = req.query.status === undefined ? undefined : RunStatusSchema.safeParse(req.query.status);
    if (status && !status.success) throw new ApiError('invalid_request', 'status must be one of queued, running, paused, completed, failed, cancelled', zodIssues(status.error));
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError('invalid_request', 'limit must be an integer from 1 to 200');
    let cursor: ListCursor | null = null;
    if (req.query.cursor !== undefined && req.query.cursor !== '') {
      const m = typeof req.query.cursor === 'string' ? CURSOR_RE.exec(req.query.cursor) : null;
      if (!m) throw new ApiError('invalid_request', 'cursor is not valid: pass nextCursor from the previous page');
      cursor = { score: Number(m[1]), runId: m[2]! };
    }
    const page = await d.store.listRuns(req.tenant!, { status: status?.data, limit, cursor });
    res.json({ data: page.runs, nextCursor: page.nextCursor === null ? null : encodeCursor(page.nextCursor) });
  }));

  app.get('/v1/runs/:id', wrap(async (req, res) => {
    const st = await ownRun(req);
    const include = String(req.query.include ?? '').split(',');
    const extra: Parameters<typeof toSnapshot>[1] = {};
    if (include.includes('messages')) extra.messages = await d.store.view(st);
    if (include.includes('history')) extra.history = await d.store.messages(st.id);
    res.json(toSnapshot(st, extra));
  }));

  app.get('/v1/runs/:id/events', wrap(async (req, res) => {
    const id = String(req.params.id);
    const head = await d.store.streamHead(id);
    if (!head || head.tenant !== req.tenant) throw new ApiError('not_found', `run ${id} not found`);
    const { status, seq } = head;
    const header = req.get('last-event-id');
    const param = header !== undefined ? 'Last-Event-ID' : 'after';
    const raw = header ?? (req.query.after as string | undefined) ?? '0';
    const after = typeof raw === 'string' && /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (!Number.isInteger(after) || after < 0) throw new ApiError('invalid_request', 'Last-Event-ID / after must be a non-negative integer');
    // at or past the terminal event there is nothing more to send: 204 stops a standard EventSource reconnecting
    if (isTerminalStatus(status) && after >= seq) return void res.status(204).end();
    // past the last event of a live run: no event was sent with that id (a client resuming sends one it received,
    // at most the run's seq), and a stream waiting for it would skip every event up to it
    if (after > seq)
      throw new ApiError('invalid_request', `${param} ${after} is past the run's last event (seq ${seq}): resume from the id of an event received`, [
        { path: [param], code: 'too_big', message: `at most ${seq}, the seq of the run's last event` },
      ]);
    // the tenant's `streams` limit: a slot held until the stream closes, however it closes
    const slot = await d.limiter?.openStream(req.tenant!);
    if (slot && !slot.ok) {
      d.metrics?.rateLimited.inc({ limit: 'streams' });
      res.set('retry-after', '1');
      throw new ApiError('rate_limited', `the tenant has ${slot.open} open event streams, its streams limit (AGENTLOOP_TENANT_LIMITS)`);
    }
    await streamEvents(res, id, after, d.store, d.hub, { slot: slot?.lease, server: d.eventStreams });
  }));

  // Extension (documented in docs/ARCHITECTURE.md): a call's full record — the uncapped result the transcript cut.
  app.get('/v1/runs/:id/calls/:callId', wrap(async (req, res) => {
    const st = await ownRun(req);
    // stored call ids are safe ids: anything else (`<id>:out` would read a sibling field) names no call
    const rec = SAFE_CALL_ID_RE.test(String(req.params.callId)) ? await d.store.calls.record(st.id, String(req.params.callId)) : null;
    if (!rec) throw new ApiError('not_found', `call ${req.params.callId} not found in run ${st.id}`);
    const o = rec.outcome;
    res.json({
      callId: req.params.callId,
      name: rec.meta.name,
      arguments: argumentsForDisplay(rec.meta.arguments),
      iteration: rec.meta.iteration,
      status: o ? o.status : rec.status === 'running' ? 'running' : 'pending',
      decision: rec.decision,
      ...(o?.result !== undefined ? { result: o.result } : {}),
      ...(o?.error ? { error: o.error } : {}),
      ...(o ? { content: o.content } : {}),
      ...(o?.durationMs !== undefined ? { durationMs: o.durationMs } : {}),
    });
  }));

  // SPEC §2: the run's webhook deliveries, oldest first (a run without notify has none)
  app.get('/v1/runs/:id/webhooks', wrap(async (req, res) => {
    const id = String(req.params.id);
    if ((await d.store.tenantOf(id)) !== req.tenant) throw new ApiError('not_found', `run ${id} not found`);
    res.json({ data: await d.store.webhooks.list(id) });
  }));

  app.post('/v1/runs/:id/cancel', wrap(async (req, res) => { // (its body is not read: ownership is the first check)
    const st = await ownRun(req);
    const r = await d.store.requestCancel(st.id, 'cancelled by request');
    if (r.kind === 'terminal') throw new ApiError('conflict', `run ${st.id} already ended (${st.status})`);
    if (r.kind === 'requested') await d.publishCancel(st.id);
    else {
      d.metrics?.countCalls(r.closed, 'cancelled', await d.catalog.all(), 'cancelled'); // a paused run's calls
      d.metrics?.runsFinished.inc({ status: 'cancelled', stop_reason: 'cancelled' });
    }
    res.status(202).json({ id: st.id, status: r.kind === 'ended' ? 'cancelled' : 'cancelling' });
  }));

  // another tenant's run answers like a missing one, before any other check: before the body is even read
  const ownedBeforeBody = wrap(async (req) => {
    if ((await d.store.tenantOf(String(req.params.id))) !== req.tenant) throw new ApiError('not_found', `run ${req.params.id} not found`);
  }, true);

  app.post('/v1/runs/:id/decisions', ownedBeforeBody, body, wrap(async (req, res) => {
    const id = String(req.params.id);
    const parsed = DecisionRequestSchema.safeParse(jsonBody(req));
    if (!parsed.success) throw new ApiError('invalid_request', 'the body is not a valid decision request', zodIssues(parsed.error));
    // the decision script checks again that the run is this tenant's, and that it is paused (one step, no read)
    const r = await d.decisions.apply(req.tenant!, id, parsed.data.decisions, undefined, { ownerChecked: true });
    switch (r.kind) {
      case 'not_found':
        throw new ApiError('not_found', `run ${id} not found`);
      case 'conflict':
        throw new ApiError('conflict', r.message);
      case 'invalid':
        throw new ApiError('invalid_request', r.message, r.details);
      case 'applied':
        res.status(202).json({ status: r.status, remaining: r.remaining });
    }
  }));

  app.get('/v1/tools', wrap(async (_req, res) => {
    const all = await d.catalog.all();
    res.json({ data: [...all.values()].map((t) => ({ name: t.name, description: t.description, parameters: t.parameters, sideEffect: t.sideEffect, pool: t.pool })) });
  }));

  app.use((_req: Request, _res: Response, next: NextFunction) => next(new ApiError('not_found', 'no such route')));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return void res.end();
    if (err instanceof ApiError) return sendError(res, err);
    const e = err as { type?: string; status?: number; message?: string };
    if (e?.type === 'entity.too.large') return sendError(res, new ApiError('payload_too_large', 'the request body is larger than 1 MiB'));
    // a body that cannot be read (unknown Content-Encoding or charset, broken compression, aborted upload): 400
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return sendError(res, new ApiError('invalid_request', `the request body cannot be decoded: ${e.message ?? 'bad request'}`));
    d.logger.error({ err }, 'unhandled API error');
    sendError(res, new ApiError('internal', 'internal error'));
  });
  return app;
}
