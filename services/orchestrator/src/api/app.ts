import express, { type NextFunction, type Request, type Response } from 'express';
import { DecisionRequestSchema, MAX_JSON_DEPTH, RunStatusSchema, argumentsForDisplay, textJsonDepth } from '@agentloop/protocol';
import { toSnapshot, type EventHub, type Logger, type RunStore, type ToolCatalog } from '@agentloop/runtime';
import type { RunIntake } from '../intake.js';
import type { DecisionService } from '../decisions/decision-service.js';
import { zodIssues } from '../intake.js';
import { ApiError, sendError } from './errors.js';
import { openApiDocument } from './openapi.js';
import { ADMIN_PATH } from './admin.js';
import { streamEvents } from './sse.js';

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
  ready: () => Promise<boolean>;
  /** Bull Board (mounted at /admin/queues when an admin key is configured). */
  admin?: express.Router;
  /** Broadcast a cancellation so the process holding the run's step aborts it. */
  publishCancel: (runId: string) => Promise<void>;
}

type Authed = Request & { tenant?: string };

const wrap = (fn: (req: Authed, res: Response) => Promise<void>) => (req: Request, res: Response, next: NextFunction) => {
  fn(req as Authed, res).catch(next);
};

/** Parses a JSON body read as text: depth-limited before parsing, 400 on malformed JSON. */
function jsonBody(req: Request): unknown {
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

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', wrap(async (_req, res) => {
    const ok = await d.ready().catch(() => false);
    res.status(ok ? 200 : 503).json({ status: ok ? 'ready' : 'not_ready' });
  }));
  app.get('/metrics', wrap(async (_req, res) => {
    res.type('text/plain; version=0.0.4').send(await d.metricsText());
  }));
  app.get('/v1/openapi.json', (_req, res) => void res.json(openApiDocument()));
  if (d.admin) app.use(ADMIN_PATH, d.admin);

  app.use('/v1', (req: Authed, _res, next) => {
    if (!d.authRequired) {
      req.tenant = 'default';
      return next();
    }
    const m = /^Bearer\s+(.+)$/i.exec(req.get('authorization') ?? '');
    const tenant = m ? d.apiKeys.get(m[1]!.trim()) : undefined;
    if (!tenant) return next(new ApiError('unauthorized', m ? 'unknown API key' : 'missing Authorization: Bearer <key>'));
    req.tenant = tenant;
    next();
  });

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
      case 'created':
        res.status(202).location(`/v1/runs/${r.runId}`).json(created(r.runId, 'queued'));
    }
  }));

  app.get('/v1/runs', wrap(async (req, res) => {
    const status = req.query.status === undefined ? undefined : RunStatusSchema.safeParse(req.query.status);
    if (status && !status.success) throw new ApiError('invalid_request', 'status must be one of queued, running, paused, completed, failed, cancelled', zodIssues(status.error));
    const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ApiError('invalid_request', 'limit must be an integer from 1 to 200');
    const cursor = req.query.cursor === undefined || req.query.cursor === '' ? 0 : Number(req.query.cursor);
    if (!Number.isInteger(cursor) || cursor < 0) throw new ApiError('invalid_request', 'cursor is not valid');
    const page = await d.store.listRuns(req.tenant!, { status: status?.data, limit, cursor });
    res.json({ data: page.runs.map((s) => toSnapshot(s)), nextCursor: page.nextCursor === null ? null : String(page.nextCursor) });
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
    const st = await ownRun(req);
    const raw = req.get('last-event-id') ?? (req.query.after as string | undefined) ?? '0';
    const after = Number(raw);
    if (!Number.isInteger(after) || after < 0) throw new ApiError('invalid_request', 'Last-Event-ID / after must be a non-negative integer');
    await streamEvents(req, res, st.id, after, d.store, d.hub);
  }));

  // Extension (documented in docs/ARCHITECTURE.md): a call's full record — the uncapped result the transcript cut.
  app.get('/v1/runs/:id/calls/:callId', wrap(async (req, res) => {
    const st = await ownRun(req);
    const rec = await d.store.callRecord(st.id, String(req.params.callId));
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

  app.post('/v1/runs/:id/cancel', body, wrap(async (req, res) => {
    const st = await ownRun(req);
    const r = await d.store.requestCancel(st.id, 'cancelled by request');
    if (r === 'terminal') throw new ApiError('conflict', `run ${st.id} already ended (${st.status})`);
    if (r === 'requested') await d.publishCancel(st.id);
    res.status(202).json({ id: st.id, status: r === 'ended' ? 'cancelled' : 'cancelling' });
  }));

  app.post('/v1/runs/:id/decisions', body, wrap(async (req, res) => {
    const id = String(req.params.id);
    const parsed = DecisionRequestSchema.safeParse(jsonBody(req));
    if (!parsed.success) throw new ApiError('invalid_request', 'the body is not a valid decision request', zodIssues(parsed.error));
    // no read first: the decision script checks that the run exists, is this tenant's and is paused
    const r = await d.decisions.apply(req.tenant!, id, parsed.data.decisions);
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
    if (e?.status === 400) return sendError(res, new ApiError('invalid_request', e.message ?? 'bad request'));
    d.logger.error({ err }, 'unhandled API error');
    sendError(res, new ApiError('internal', 'internal error'));
  });
  return app;
}
