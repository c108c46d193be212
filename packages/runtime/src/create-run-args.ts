import {
  DEFAULT_NOTIFY_EVENTS,
  SCHEMA_VERSION,
  runPlaceholder,
  wellFormedJson,
  type DeploymentKeys,
  type NewEvent,
} from '@agentloop/protocol';
import { RATE_LIMITED_ERROR, THREAD_BUSY_ERROR, type CreateRunInput, type CreateRunResult } from './run-store-types.js';
import type { RunScripts } from './run-scripts.js';

/** Seconds an idempotency key is kept (SPEC §2: 24 h). */
export const IDEMPOTENCY_TTL_S = 86_400;

/** createRun-22.lua: creates the run (or answers why not: the idempotency key's run, a limit, a busy thread). */
export async function createRun(
  scripts: RunScripts,
  keys: DeploymentKeys,
  input: CreateRunInput,
  retentionS: number,
): Promise<CreateRunResult> {
  const idemKey = input.idempotencyKey ? keys.idempotency(input.tenant, input.idempotencyKey) : '';
  const res = await scripts.run(
    'createRun',
    input.runId,
    (ev) => [createRunArgs(input, { idemTtlS: IDEMPOTENCY_TTL_S, retentionS, ev })],
    [...keys.runStatusScript(input.runId, input.tenant, idemKey), ...threadKeys(keys, input)],
    input.tenant,
  );
  if (res.outcome === 'created') scripts.refs.remember(input.runId, { tenant: input.tenant, idem: idemKey });
  switch (res.outcome) {
    case 'limited':
      return { created: false, limited: true, activeRuns: Number(res.values[0]) };
    case 'taken':
      return { created: false, taken: true };
    case 'created':
      return {
        created: true,
        runId: input.runId,
        status: res.values[0] === 'failed' ? 'failed' : 'queued',
        waitsFor: String(res.values[1] ?? ''),
        queued: Number(res.values[2] ?? 0),
      };
    case 'thread_busy':
      return { created: false, threadBusy: true, activeRunId: String(res.values[0]) };
    case 'exists': {
      const [runId, bodyHash] = String(res.values[0]).split(' ');
      return { created: false, runId: runId!, bodyHash: bodyHash! };
    }
  }
}

/** createRun's thread keys (placeholders named after the run when it has no thread). */
function threadKeys(keys: DeploymentKeys, input: CreateRunInput): string[] {
  if (!input.request.threadId) return [1, 2, 3, 4].map((i) => runPlaceholder(keys.run(input.runId), `nothread${i}`));
  const t = keys.thread(input.tenant, input.request.threadId);
  return [t.hash, t.runs, t.messages, t.waiting];
}

/** The one argument of `createRun-22.lua`, as it decodes it (strings where Redis stores the value as it is). */
export interface CreateRunArgs {
  tenant: string;
  /** The request without its input, as stored. */
  request: string;
  bodyHash: string;
  /** Seconds the idempotency key is kept ('0': no key). */
  idemTtl: string;
  /** The initial transcript, one message JSON text each. */
  messages: string[];
  events: string;
  status: 'queued' | 'failed';
  error: string;
  model: string;
  mode: string;
  metadata: string;
  v: string;
  maxWallMs: string;
  /** The tenant's activeRuns limit ('-1': none). */
  activeLimit: string;
  retention: string;
  /** Events of a run created failed at the limit (a queued job's run); '' refuses instead (HTTP: 429). */
  limitedEvents: string;
  limitedError: string;
  reservedIds: string[];
  structured: '1' | '0';
  /** 'q': created by queue intake (its end is reported on `results`). */
  src: 'q' | '';
  threadId: string;
  threadPolicy: 'reject' | 'enqueue' | 'interrupt';
  /** The leading system messages of `messages` (a thread's conversation goes after them). */
  systemCount: string;
  /** Events and error of a queue-intake run refused by its busy thread (created failed); '' refuses (HTTP: 409). */
  threadBusyEvents: string;
  threadBusyError: string;
  /** A run with notify: the event types it delivers, `,run.paused,run.completed,` ('' = no notify). */
  wh: string;
  /** A run with notify: where its deliveries go. */
  whUrl: string;
  /** The traceparent of the run's root span `invoke_agent` ('' when tracing is off): every later span parents or links to it. */
  tp: string;
}

/** Builds createRun's argument; `ev` renders events as the script's envelope lines. */
export function createRunArgs(
  input: CreateRunInput,
  o: { idemTtlS: number; retentionS: number; ev: (events: readonly NewEvent[]) => string },
): string {
  const { input: _omit, ...requestWithoutInput } = input.request;
  const events: NewEvent[] = [{ type: 'run.queued', data: {} }];
  if (input.invalid) events.push({ type: 'run.failed', data: { error: input.invalid.error } });
  const notify = input.request.notify;
  const limited =
    input.activeRuns?.atLimit === 'fail'
      ? [events[0]!, { type: 'run.failed', data: { error: RATE_LIMITED_ERROR } } satisfies NewEvent]
      : null;
  const args: CreateRunArgs = {
    tenant: input.tenant,
    request: wellFormedJson(requestWithoutInput),
    bodyHash: input.bodyHash,
    idemTtl: String(input.idempotencyKey ? o.idemTtlS : 0),
    messages: input.messages.map((m) => wellFormedJson(m)),
    events: o.ev(events),
    status: input.invalid ? 'failed' : 'queued',
    error: input.invalid
      ? wellFormedJson({ code: input.invalid.error.code, message: input.invalid.error.message })
      : '',
    model: wellFormedJson(input.request.model),
    mode: input.request.mode,
    metadata: wellFormedJson(input.request.metadata),
    v: String(SCHEMA_VERSION),
    maxWallMs: String(input.request.limits.maxWallMs ?? 0),
    activeLimit: String(input.activeRuns ? input.activeRuns.limit : -1),
    retention: String(o.retentionS),
    limitedEvents: limited ? o.ev(limited) : '',
    limitedError: wellFormedJson(RATE_LIMITED_ERROR),
    reservedIds: input.messages.flatMap((m) => (m.toolCalls ?? []).map((c) => c.id)),
    structured: input.request.output ? '1' : '0',
    src: input.fromQueue ? 'q' : '',
    threadId: input.request.threadId ?? '',
    threadPolicy: input.request.threadPolicy,
    systemCount: String(
      input.messages.findIndex((m) => m.role !== 'system') < 0
        ? input.messages.length
        : input.messages.findIndex((m) => m.role !== 'system'),
    ),
    threadBusyEvents: input.fromQueue
      ? o.ev([events[0]!, { type: 'run.failed', data: { error: THREAD_BUSY_ERROR } }])
      : '',
    threadBusyError: wellFormedJson(THREAD_BUSY_ERROR),
    wh: notify ? `,${[...new Set(notify.events ?? DEFAULT_NOTIFY_EVENTS)].join(',')},` : '',
    whUrl: notify?.url ?? '',
    tp: input.traceparent ?? '',
  };
  return wellFormedJson(args);
}
