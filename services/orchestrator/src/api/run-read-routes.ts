import type express from 'express';
import { RunStatusSchema, SAFE_CALL_ID_RE, argumentsForDisplay, isTerminalStatus } from '@agentloop/protocol';
import { toSnapshot, type ListCursor, type RunState } from '@agentloop/runtime';
import type { ServicePartition } from '../service-partition.js';
import { zodIssues } from '../intake.js';
import type { ApiDeps } from './api-deps.js';
import { wrap, type Authed } from './async-handler.js';
import { ApiError } from './errors.js';
import { streamEvents } from './sse.js';

/** Listing cursors are the last run returned: `<createdAt ms>.<run id>`. */
const CURSOR_RE = /^(\d{1,16})\.([A-Za-z0-9_-]{1,64})$/;
const encodeCursor = (c: ListCursor) => `${c.score}.${c.runId}`;

/** A run of the request's tenant, and the partition that holds it. */
export interface OwnRun {
  st: RunState;
  p: ServicePartition;
}

/**
 * The reads of a tenant's runs: the listing, a run's snapshot, its event stream, a call's full record, its webhook
 * deliveries. `ownRun` loads the run of the request's id, or answers not_found when it is not the tenant's.
 */
export function addRunReadRoutes(app: express.Express, d: ApiDeps, ownRun: (req: Authed) => Promise<OwnRun>): void {
  app.get(
    '/v1/runs',
    wrap(async (req, res) => {
      const status = req.query.status === undefined ? undefined : RunStatusSchema.safeParse(req.query.status);
      if (status && !status.success)
        throw new ApiError(
          'invalid_request',
          'status must be one of queued, running, paused, completed, failed, cancelled',
          zodIssues(status.error),
        );
      const limit = req.query.limit === undefined ? 50 : Number(req.query.limit);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200)
        throw new ApiError('invalid_request', 'limit must be an integer from 1 to 200');
      let cursor: ListCursor | null = null;
      if (req.query.cursor !== undefined && req.query.cursor !== '') {
        const m = typeof req.query.cursor === 'string' ? CURSOR_RE.exec(req.query.cursor) : null;
        if (!m) throw new ApiError('invalid_request', 'cursor is not valid: pass nextCursor from the previous page');
        cursor = { score: Number(m[1]), runId: m[2]! };
      }
      const page = await d.partitions.listRuns(req.tenant!, { status: status?.data, limit, cursor });
      res.json({ data: page.runs, nextCursor: page.nextCursor === null ? null : encodeCursor(page.nextCursor) });
    }),
  );

  app.get(
    '/v1/runs/:id',
    wrap(async (req, res) => {
      const { st, p } = await ownRun(req);
      const include = String(req.query.include ?? '').split(',');
      const extra: Parameters<typeof toSnapshot>[1] = {};
      if (include.includes('messages')) extra.messages = await p.store.view(st);
      if (include.includes('history')) extra.history = await p.store.messages(st.id);
      res.json(toSnapshot(st, extra));
    }),
  );

  app.get(
    '/v1/runs/:id/events',
    wrap(async (req, res) => {
      const id = String(req.params.id);
      const found = await d.partitions.find(id, (store) => store.streamHead(id));
      if (!found || found.value.tenant !== req.tenant) throw new ApiError('not_found', `run ${id} not found`);
      const { status, seq } = found.value;
      const header = req.get('last-event-id');
      const param = header !== undefined ? 'Last-Event-ID' : 'after';
      const raw = header ?? (req.query.after as string | undefined) ?? '0';
      const after = typeof raw === 'string' && /^\d{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
      if (!Number.isInteger(after) || after < 0)
        throw new ApiError('invalid_request', 'Last-Event-ID / after must be a non-negative integer');
      // at or past the terminal event there is nothing more to send: 204 stops a standard EventSource reconnecting
      if (isTerminalStatus(status) && after >= seq) return void res.status(204).end();
      // past the last event of a live run: no event was sent with that id (a client resuming sends one it received,
      // at most the run's seq), and a stream waiting for it would skip every event up to it
      if (after > seq)
        throw new ApiError(
          'invalid_request',
          `${param} ${after} is past the run's last event (seq ${seq}): resume from the id of an event received`,
          [{ path: [param], code: 'too_big', message: `at most ${seq}, the seq of the run's last event` }],
        );
      // the tenant's `streams` limit: a slot held until the stream closes, however it closes
      const slot = await d.limiter?.openStream(req.tenant!);
      if (slot && !slot.ok) {
        d.metrics?.rateLimited.inc({ limit: 'streams' });
        res.set('retry-after', '1');
        throw new ApiError(
          'rate_limited',
          `the tenant has ${slot.open} open event streams, its streams limit (AGENTLOOP_TENANT_LIMITS)`,
        );
      }
      await streamEvents(res, id, after, found.partition.store, d.hub, { slot: slot?.lease, server: d.eventStreams });
    }),
  );

  // Extension (documented in docs/ARCHITECTURE.md): a call's full record — the uncapped result the transcript cut.
  app.get(
    '/v1/runs/:id/calls/:callId',
    wrap(async (req, res) => {
      const { st, p } = await ownRun(req);
      // stored call ids are safe ids: anything else (`<id>:out` would read a sibling field) names no call
      const rec = SAFE_CALL_ID_RE.test(String(req.params.callId))
        ? await p.store.calls.record(st.id, String(req.params.callId))
        : null;
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
    }),
  );

  // SPEC §2: the run's webhook deliveries, oldest first (a run without notify has none)
  app.get(
    '/v1/runs/:id/webhooks',
    wrap(async (req, res) => {
      const id = String(req.params.id);
      const at = await d.partitions.locate(id);
      if (!at || at.tenant !== req.tenant) throw new ApiError('not_found', `run ${id} not found`);
      res.json({ data: await at.partition.store.webhooks.list(id) });
    }),
  );
}
