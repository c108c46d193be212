import { z } from 'zod';
import {
  MAX_JSON_DEPTH,
  RunRequestSchema,
  canonicalJson,
  isTerminalStatus,
  jsonDepth,
  type Message,
  type RunRequest,
} from '@agentloop/protocol';
import { EndpointPolicy, PriceTable } from '@agentloop/llm';
import {
  RunStore,
  newRunTrace,
  withTraceparent,
  type Metrics,
  type Partition,
  type Partitions,
  type ToolCatalog,
} from '@agentloop/runtime';
import { outputSchemaIssues } from './output/output-intake.js';
import { outputValidator } from './output/isolated-validator.js';
import { WebhookPolicy } from './webhooks/webhook-policy.js';
import { policyIssues, type IntakePolicy } from './intake-policy.js';

const MAX_REQUEST_CHARS = 1_048_576;

export type IntakeResult =
  | { kind: 'created'; runId: string }
  | { kind: 'existing'; runId: string; status: string }
  | { kind: 'invalid'; issues: unknown; message: string }
  | { kind: 'mismatch'; runId: string }
  | { kind: 'limited'; activeRuns: number }
  /** The run id (given at queue intake) names another tenant's run. */
  | { kind: 'taken'; runId: string }
  /** threadPolicy reject: the thread has a run queued, running or paused (409). */
  | { kind: 'thread_busy'; activeRunId: string };

const NO_WEBHOOKS = new WebhookPolicy({ secrets: new Map(), retryBaseMs: 5000, allowedUrls: [], timeoutMs: 10_000 });

/** How long a request waits for a thread whose active run has ended to be released by the outbox relay. */
const THREAD_RELEASE_WAIT_MS = 2_000;

/** The first messages of a run's transcript: the system prompt, then the input (text or prior conversation). */
export function initialMessages(req: RunRequest): Message[] {
  const msgs: Message[] = [];
  if (req.system !== undefined) msgs.push({ role: 'system', content: req.system });
  if (typeof req.input === 'string') msgs.push({ role: 'user', content: req.input });
  else msgs.push(...req.input);
  return msgs;
}

/**
 * What a repeated request is compared by: the hash of its canonical body when it may meet an earlier run — the same
 * idempotency key, or the same `runId` (queue intake). A run id this intake just drew meets no other request, only
 * a resend of its own create, which carries the same marker. (A `requests` job naming a run id the API drew is
 * answered as a different request: `mismatch`. canonicalJson walks the body: a body too deep for that is invalid
 * anyway, and hashed by a marker.)
 */
function requestHash(body: unknown, tooDeep: boolean, opts: { idempotencyKey?: string; runId?: string }): string {
  if (!opts.idempotencyKey && !opts.runId) return 'fresh';
  return RunStore.bodyHash(tooDeep ? 'invalid: too deep' : canonicalJson(body));
}

export function zodIssues(err: z.ZodError) {
  return err.issues.map((i) => ({ path: i.path.map(String), code: i.code, message: i.message }));
}

/**
 * Validates and creates a run, then queues its first iteration. One path for the HTTP API and for queue intake,
 * so both accept and refuse exactly the same requests.
 */
export class RunIntake {
  constructor(
    /** Where runs go: the new run's partition (by its thread, idempotency key or given id) creates and starts it. */
    private readonly partitions: Partitions,
    private readonly catalog: ToolCatalog,
    private readonly metrics: Metrics,
    private readonly policy: IntakePolicy = { endpoints: new EndpointPolicy(), prices: new PriceTable(), limits: null },
  ) {}

  /** Validation only: the parsed request, or the issues to answer with 400. `tooDeep`: the caller's depth check of the body. */
  private async validate(
    tenant: string,
    body: unknown,
    tooDeep: boolean,
  ): Promise<{ ok: true; request: RunRequest } | { ok: false; message: string; issues: unknown }> {
    if (tooDeep) return { ok: false, message: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, issues: [] };
    // the HTTP body limit, for queue intake too (a job's payload has no other bound), on the value as it will be
    // stored: re-serialized JSON can be several times its text (`1e20` → `100000000000000000000`)
    if ((JSON.stringify(body)?.length ?? 0) > MAX_REQUEST_CHARS)
      return { ok: false, message: 'the request is larger than 1 MiB', issues: [] };
    const parsed = RunRequestSchema.safeParse(body);
    if (!parsed.success)
      return { ok: false, message: 'the request body is not a valid RunRequest', issues: zodIssues(parsed.error) };
    const refused = policyIssues(parsed.data, this.policy);
    if (refused.length)
      return {
        ok: false,
        message: 'the request names a model endpoint, credential or price this deployment does not allow',
        issues: refused,
      };
    const unreachable = await this.unreachableProviders(parsed.data);
    if (unreachable.length)
      return {
        ok: false,
        message: 'no orchestrator of this deployment can call the model provider the request names',
        issues: unreachable,
      };
    const notify = await (this.policy.webhooks ?? NO_WEBHOOKS).issues(parsed.data.notify, tenant);
    if (notify.length) return { ok: false, message: `notify cannot be used: ${notify[0]!.message}`, issues: notify };
    const output = await outputSchemaIssues(parsed.data, {
      compile: (schema) => outputValidator.compile(schema, tenant),
    });
    if (output.length)
      return { ok: false, message: `output.schema cannot be used: ${output[0]!.message}`, issues: output };
    // a tool the cached catalog lacks is looked for in Redis before the request is refused (published since)
    const catalog = await this.catalog.lookup(parsed.data.tools);
    if (catalog.size) {
      const unknown = parsed.data.tools.filter((t) => !catalog.has(t));
      if (unknown.length)
        return {
          ok: false,
          message: `unknown tool(s): ${unknown.join(', ')}`,
          issues: unknown.map((t) => ({
            path: ['tools', String(parsed.data.tools.indexOf(t))],
            code: 'unknown_tool',
            message: `no tool named '${t}' is registered (GET /v1/tools lists them)`,
          })),
        };
    }
    return { ok: true, request: parsed.data };
  }

  /**
   * Models whose provider no orchestrator has a key for (they publish which they have: ProviderCatalog). A model with
   * its own endpoint (`baseUrl`, the operator's to allow) or key (`apiKeyEnv`) does not use the provider's key; before
   * any orchestrator has published, nothing is refused.
   */
  private async unreachableProviders(
    req: RunRequest,
  ): Promise<Array<{ path: string[]; code: string; message: string }>> {
    const available = await this.policy.providers?.available();
    if (!available) return [];
    const specs: Array<[string[], RunRequest['model']]> = [
      [['model'], req.model],
      ...req.fallbacks.map((f, i) => [['fallbacks', String(i)], f] as [string[], RunRequest['model']]),
    ];
    return specs
      .filter(([, m]) => !m.apiKeyEnv && !m.baseUrl && m.provider !== 'openai-compatible' && !available.has(m.provider))
      .map(([at, m]) => ({
        path: [...at, 'provider'],
        code: 'not_configured',
        message: `no orchestrator has a key for provider '${m.provider}' (the operator has not configured it)`,
      }));
  }

  /** `badEnvelope`: a `requests` job whose envelope (runId, idempotencyKey) is invalid: its run fails with this. */
  async create(
    tenant: string,
    body: unknown,
    opts: {
      idempotencyKey?: string;
      runId?: string;
      failInvalid?: boolean;
      badEnvelope?: { message: string; issues: unknown };
    } = {},
  ): Promise<IntakeResult> {
    const tooDeep = jsonDepth(body) > MAX_JSON_DEPTH;
    const v = opts.badEnvelope
      ? { ok: false as const, ...opts.badEnvelope }
      : await this.validate(tenant, body, tooDeep);
    if (!v.ok && !opts.failInvalid) return { kind: 'invalid', issues: v.issues, message: v.message };
    const { partition, runId } = await this.partitions.place(tenant, {
      threadId: v.ok ? v.request.threadId : undefined,
      idempotencyKey: opts.idempotencyKey,
      runId: opts.runId,
    });
    const store = partition.store;
    const bodyHash = requestHash(body, tooDeep, opts);
    if (!v.ok) {
      // Queue intake: an invalid request still becomes a run, failed from the start, never a dropped job.
      const fallback = RunRequestSchema.parse({
        input: '(invalid request)',
        model: { provider: 'openai', name: 'invalid' },
      });
      const res = await store.create({
        runId,
        tenant,
        request: fallback,
        messages: [],
        bodyHash,
        idempotencyKey: opts.idempotencyKey,
        fromQueue: true,
        invalid: { error: { code: 'invalid_request', message: v.message, details: v.issues } },
      });
      if (res.created) this.metrics.runsFinished.inc({ status: 'failed', stop_reason: 'none' });
      if ('limited' in res) throw new Error('unreachable: an invalid run is not counted against activeRuns');
      if ('taken' in res) return { kind: 'taken', runId };
      if ('threadBusy' in res) throw new Error('unreachable: an invalid run joins no thread');
      if (res.created) return { kind: 'created', runId };
      // the run id or key names a run made from another body: that run is not this request's (and is left alone)
      return res.bodyHash !== bodyHash
        ? { kind: 'mismatch', runId: res.runId }
        : { kind: 'existing', runId: res.runId, status: 'failed' };
    }
    const cap = this.policy.limits?.activeRuns(tenant) ?? null;
    const runTrace = newRunTrace(); // SPEC §8: the root span's ids are stored with the run (its span is recorded when its first segment ends)
    let outside = 0;
    const create = async () => {
      // the limit spans partitions: the run's partition checks it atomically against what the others hold
      outside = cap === null ? 0 : await this.partitions.activeRunsOutside(tenant, partition);
      const atLimit = opts.failInvalid ? ('fail' as const) : ('refuse' as const);
      return store.create({
        runId,
        tenant,
        request: v.request,
        messages: initialMessages(v.request),
        bodyHash,
        idempotencyKey: opts.idempotencyKey,
        activeRuns: cap === null ? null : { limit: Math.max(0, cap - outside), atLimit },
        fromQueue: opts.failInvalid,
        traceparent: runTrace?.traceparent,
      });
    };
    const attempt = () => (cap === null ? create() : this.partitions.limitedCreation(tenant, create));
    let res = await attempt();
    // a run that ended leaves its thread a moment later (the outbox relay's step): only a run queued, running or
    // paused makes the thread busy (SPEC §2), so wait that moment out rather than answer 409
    for (
      const t0 = Date.now();
      'threadBusy' in res && Date.now() - t0 < THREAD_RELEASE_WAIT_MS;
      res = await attempt()
    ) {
      const active = await store.fieldsOf(res.activeRunId, ['status']);
      if (!active?.status || !isTerminalStatus(active.status)) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if ('limited' in res) {
      this.metrics.rateLimited.inc({ limit: 'active_runs' });
      return { kind: 'limited', activeRuns: res.activeRuns + outside };
    }
    if ('taken' in res) return { kind: 'taken', runId };
    if ('threadBusy' in res) return { kind: 'thread_busy', activeRunId: res.activeRunId };
    if (res.created && res.status === 'failed') {
      // queue intake at the activeRuns limit (rate_limited) or on a busy thread (thread_busy): the run exists, failed
      if ((await store.fieldsOf(runId, ['error']))?.error?.includes('"rate_limited"'))
        this.metrics.rateLimited.inc({ limit: 'active_runs' });
      this.metrics.runsFinished.inc({ status: 'failed', stop_reason: 'none' });
      return { kind: 'created', runId };
    }
    if (!res.created) {
      if (res.bodyHash !== bodyHash) return { kind: 'mismatch', runId: res.runId };
      const st = await store.fieldsOf(res.runId, ['status', 'thrWait']);
      // the creator may have died before queueing it (a run waiting on its thread is started by the thread's relay)
      if (st?.status === 'queued' && st.thrWait !== '1') await partition.scheduler.start(res.runId, false, tenant);
      return { kind: 'existing', runId: res.runId, status: st?.status ?? 'queued' };
    }
    if (res.waitsFor) {
      // it waits on its thread: started when the runs ahead of it end; `interrupt` ends the active one now
      if (v.request.threadPolicy === 'interrupt') await this.interrupt(partition, res.waitsFor, runId);
      return { kind: 'created', runId };
    }
    // a new run's first iteration is a call with tools, unless a wall-clock budget may have run out in the queue
    await withTraceparent(runTrace?.traceparent, () =>
      partition.scheduler.start(runId, !v.request.limits.maxWallMs, tenant, res.queued),
    );
    return { kind: 'created', runId };
  }

  /** Cancels a thread's active run (in the thread's partition) for a newer run of the thread (threadPolicy interrupt). */
  private async interrupt(partition: Partition, activeRunId: string, by: string): Promise<void> {
    const store = partition.store;
    const r = await store.requestCancel(activeRunId, `interrupted by run ${by} of its thread`);
    if (r.kind === 'requested') await store.redis.publish(store.keys.cancelChannel, activeRunId);
    else if (r.kind === 'ended') this.metrics.runsFinished.inc({ status: 'cancelled', stop_reason: 'cancelled' });
  }

  /**
   * Queues the first iteration of runs still queued `olderThanMs` after their creation, in the given partitions: the
   * process that created one may have died before adding its job. Adding it again is harmless (the start is a
   * compare-and-set); the reconciler does not know whose runs they are, so its stragglers go first.
   */
  async reconcileQueued(olderThanMs: number, partitions: readonly Partition[] = this.partitions.all): Promise<number> {
    let n = 0;
    for (const p of partitions) {
      const ids = await p.store.indexes.queuedSince(Date.now() - olderThanMs);
      for (const id of ids) await p.scheduler.start(id);
      n += ids.length;
    }
    return n;
  }
}
