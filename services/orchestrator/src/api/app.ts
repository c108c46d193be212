import express, { type NextFunction, type Request, type Response } from 'express';
import { DecisionRequestSchema, ThreadIdSchema } from '@agentloop/protocol';
import { readyzAnswer } from '@agentloop/runtime';
import { zodIssues } from '../intake.js';
import type { ApiDeps } from './api-deps.js';
import { wrap, type Authed } from './async-handler.js';
import { ApiError, sendError } from './errors.js';
import { jsonBody } from './json-body.js';
import { openApiDocument } from './openapi.js';
import { ADMIN_PATH } from './admin.js';
import { corsMiddleware } from './cors.js';
import { CONSOLE_PATH, consoleRouter } from './console.js';
import { addRunReadRoutes, type OwnRun } from './run-read-routes.js';

/** The 401 of a server started with AGENTLOOP_AUTH=required and no AGENTLOOP_API_KEYS. */
export const NO_API_KEYS_MESSAGE =
  'no API keys are configured on the server (AGENTLOOP_API_KEYS is empty and AGENTLOOP_AUTH is required), so every request is refused: the operator must set AGENTLOOP_API_KEYS=key=tenant,...';

export function createApp(d: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  const body = express.text({ type: () => true, limit: '1mb' });
  // a fragment never belongs in a request target (RFC 9112 §3.2); read as one, `/v1/runs/#/events` would list runs
  app.use((req, _res, next) =>
    next(
      req.url.includes('#') ? new ApiError('invalid_request', 'the request target carries a fragment (#)') : undefined,
    ),
  );
  if (d.corsOrigins?.length) app.use(corsMiddleware(d.corsOrigins));

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get(
    '/readyz',
    wrap(async (_req, res) => {
      const answer = readyzAnswer(await d.ready().catch((e: unknown) => String(e)));
      res.status(answer.status).json(answer.body);
    }),
  );
  app.get(
    '/metrics',
    wrap(async (_req, res) => {
      res.type(d.metricsContentType ?? 'text/plain; version=0.0.4').send(await d.metricsText());
    }),
  );
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
    if (!tenant)
      return next(new ApiError('unauthorized', m ? 'unknown API key' : 'missing Authorization: Bearer <key>'));
    req.tenant = tenant;
    next();
  });

  // tenant request rate (AGENTLOOP_TENANT_LIMITS): one Redis round trip, only for tenants with a rate
  if (d.limiter)
    app.use(
      '/v1',
      wrap(async (req, res) => {
        const admitted = await d.limiter!.admitRequest(req.tenant!);
        if (!admitted.ok) {
          d.metrics?.rateLimited.inc({ limit: 'requests' });
          res.set('retry-after', String(Math.max(1, Math.ceil(admitted.retryAfterMs / 1000))));
          throw new ApiError(
            'rate_limited',
            'too many requests for this tenant (AGENTLOOP_TENANT_LIMITS requestsPerSecond)',
          );
        }
      }, true),
    );

  const ownRun = async (req: Authed): Promise<OwnRun> => {
    const id = String(req.params.id);
    const found = await d.partitions.find(id, (store) => store.load(id));
    if (!found || found.value.tenant !== req.tenant) throw new ApiError('not_found', `run ${id} not found`);
    return { st: found.value, p: found.partition };
  };
  const created = (id: string, status: string) => ({ id, status, eventsUrl: `/v1/runs/${id}/events` });

  app.post(
    '/v1/runs',
    body,
    wrap(async (req, res) => {
      const payload = jsonBody(req);
      const key = req.get('idempotency-key') ?? undefined;
      if (key !== undefined && (key.length === 0 || key.length > 255))
        throw new ApiError('invalid_request', 'Idempotency-Key must be 1 to 255 characters');
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
          throw new ApiError(
            'rate_limited',
            `the tenant has ${r.activeRuns} active runs, its activeRuns limit (AGENTLOOP_TENANT_LIMITS)`,
          );
        case 'thread_busy':
          throw new ApiError(
            'conflict',
            `the thread has an active run (${r.activeRunId}); threadPolicy "enqueue" queues behind it, "interrupt" cancels it`,
          );
        case 'created':
          res.status(202).location(`/v1/runs/${r.runId}`).json(created(r.runId, 'queued'));
      }
    }),
  );

  app.get(
    '/v1/threads/:id',
    wrap(async (req, res) => {
      const id = ThreadIdSchema.safeParse(req.params.id);
      const p = id.success ? await d.partitions.threadOf(req.tenant!, id.data) : null;
      const thread = p && id.success ? await p.threads.get(req.tenant!, id.data) : null;
      if (!thread) throw new ApiError('not_found', `thread ${String(req.params.id).slice(0, 128)} not found`);
      res.json(thread);
    }),
  );

  addRunReadRoutes(app, d, ownRun);

  app.post(
    '/v1/runs/:id/cancel',
    wrap(async (req, res) => {
      // (its body is not read: ownership is the first check)
      const { st, p } = await ownRun(req);
      const r = await p.store.requestCancel(st.id, 'cancelled by request');
      if (r.kind === 'terminal') throw new ApiError('conflict', `run ${st.id} already ended (${st.status})`);
      // broadcast: the process holding the run's step aborts it
      if (r.kind === 'requested') await p.store.redis.publish(p.store.keys.cancelChannel, st.id);
      else {
        d.metrics?.countCalls(r.closed, 'cancelled', await d.catalog.all(), 'cancelled'); // a paused run's calls
        d.metrics?.runsFinished.inc({ status: 'cancelled', stop_reason: 'cancelled' });
      }
      res.status(202).json({ id: st.id, status: r.kind === 'ended' ? 'cancelled' : 'cancelling' });
    }),
  );

  // another tenant's run answers like a missing one, before any other check: before the body is even read
  const ownedBeforeBody = wrap(async (req: Authed) => {
    const at = await d.partitions.locate(String(req.params.id));
    if (!at || at.tenant !== req.tenant) throw new ApiError('not_found', `run ${req.params.id} not found`);
    req.partition = at.partition;
  }, true);

  app.post(
    '/v1/runs/:id/decisions',
    ownedBeforeBody,
    body,
    wrap(async (req, res) => {
      const id = String(req.params.id);
      const parsed = DecisionRequestSchema.safeParse(jsonBody(req));
      if (!parsed.success)
        throw new ApiError('invalid_request', 'the body is not a valid decision request', zodIssues(parsed.error));
      // the decision script checks again that the run is this tenant's, and that it is paused (one step, no read)
      const r = await req.partition!.decisions.apply(req.tenant!, id, parsed.data.decisions, undefined, {
        ownerChecked: true,
      });
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
    }),
  );

  app.get(
    '/v1/tools',
    wrap(async (_req, res) => {
      const all = await d.catalog.all();
      res.json({
        data: [...all.values()].map((t) => ({
          name: t.name,
          description: t.description,
          parameters: t.parameters,
          sideEffect: t.sideEffect,
          pool: t.pool,
        })),
      });
    }),
  );

  app.use((_req: Request, _res: Response, next: NextFunction) => next(new ApiError('not_found', 'no such route')));
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) return void res.end();
    if (err instanceof ApiError) return sendError(res, err);
    const e = err as { type?: string; status?: number; message?: string };
    if (e?.type === 'entity.too.large')
      return sendError(res, new ApiError('payload_too_large', 'the request body is larger than 1 MiB'));
    // a body that cannot be read (unknown Content-Encoding or charset, broken compression, aborted upload): 400
    if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500)
      return sendError(
        res,
        new ApiError('invalid_request', `the request body cannot be decoded: ${e.message ?? 'bad request'}`),
      );
    d.logger.error({ err }, 'unhandled API error');
    sendError(res, new ApiError('internal', 'internal error'));
  });
  return app;
}
