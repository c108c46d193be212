import { z } from 'zod';
import { traceIdOf } from './tracing/traceparent.js';
import {
  CallModeSchema,
  FinalizeReasonSchema,
  RunPhaseSchema,
  RunStatusSchema,
  StopReasonSchema,
  type CallMode,
  type FinalizeReason,
  type RunPhase,
  SCHEMA_VERSION,
  argumentsForDisplay,
  type ErrorInfo,
  type Message,
  type ModelSpec,
  type PendingCall,
  type RunRequest,
  type RunSnapshot,
  type RunStatus,
  type StopReason,
  type Usage,
} from '@agentloop/protocol';

/** A run as stored in its state hash (schemaVersion 1), parsed. */
export interface RunState {
  v: number;
  id: string;
  tenant: string;
  status: RunStatus;
  /** queued → model → tools → model … → done (paused while waiting for decisions). */
  phase: RunPhase;
  iteration: number;
  createdAt: number;
  updatedAt: number;
  request: RunRequest;
  model: ModelSpec;
  mode: 'interactive' | 'headless';
  /** The thread the run continues (SPEC §2 Threads), or null. */
  threadId: string | null;
  /** The traceparent of the run's root span `invoke_agent` (SPEC §8), absent when it was created with tracing off. */
  traceparent?: string;
  metadata: Record<string, unknown>;
  seq: number;
  error: ErrorInfo | null;
  /** Non-empty when cancellation was requested (the reason). */
  cancel: string;
  /** Call ids of the current batch, in the order the model listed them. */
  batch: string[];
  /** Why the next model call must be a final answer without tools ('' = it need not). */
  pendingFinal: FinalizeReason | '';
  /** The job that started the current iteration's model call ('' before owners were recorded). */
  owner: string;
  /** What the current iteration's model call is: 'tools' (normal) or the finalize reason. */
  callMode: CallMode | '';
  stopReason: StopReason | null;
  output: string | null;
  /** A completed run with `output.schema`: its answer parsed (undefined when the run has none). */
  outputJson: unknown;
  /** Structured output: the repair turn granted (the iteration that makes it, and its user message), or null. */
  outputRepair: OutputRepair | null;
  usage: Usage;
  repeatFingerprint: string;
  repeatCount: number;
  /** The iteration whose deltas have already been sent to clients (a retried call must tell them to discard). */
  deltaIter: number;
  pending: PendingCall[];
  /** Usage of the last model call (reported by iteration.completed). */
  iterUsage: Partial<Usage>;
  /** When a parked run's decisions expire (ms epoch; 0 when not paused). */
  pausedUntil: number;
  /** Decisions completed; the resumed iteration has not started yet. */
  resuming: boolean;
  /** The transcript the model sees is viewPrefix + history[viewFrom..] (compression rewrites these, bumping tv). */
  viewPrefix: Message[];
  viewFrom: number;
  tv: number;
}

/**
 * How a run stores what it accumulates: its calls and its events are fields of its state hash (`c:<id>…`, `e:<seq>`).
 * The one layout this build serves, written to the hash's `lay` field at creation (lua/common.lua checkLayout): a run
 * of another layout (runs of builds before 2026-12-03) is refused, and a deployment that still has live ones does not
 * start (liveRunsOfOtherLayouts; docs/OPERATIONS.md).
 */
export const RUN_LAYOUT = '3';

/**
 * The state hash fields of structured output: `outputJson` and `outputRepair` (written by the checkpoint, read by
 * parseRunState), and `structured`, set at creation: '1' when the run's request has `output.schema`, '0' when it has
 * not (so that a listing need not read the request: see run-listing.ts).
 */
export const STATE_FIELD = {
  outputJson: 'outputJson',
  outputRepair: 'outputRepair',
  structured: 'structured',
} as const;

/**
 * Every field of the state hash parseRunState reads. The hash also holds the run's calls (`c:<id>…`), its
 * events (`e:<seq>`) and a few fields only scripts read (ret, idem, bodyHash, maxWallMs, watch, edited,
 * batchMsg, lay): a run is read with HMGET of these, never HGETALL, so reading it costs the same however many calls
 * and events it has.
 */
export const STATE_FIELDS = [
  'v',
  'id',
  'tenant',
  'status',
  'phase',
  'iteration',
  'createdAt',
  'updatedAt',
  'request',
  'model',
  'mode',
  'metadata',
  'seq',
  'error',
  'cancel',
  'batch',
  'pendingFinal',
  'callMode',
  'owner',
  'stopReason',
  'output',
  STATE_FIELD.outputJson,
  STATE_FIELD.outputRepair,
  'promptTokens',
  'completionTokens',
  'reasoningTokens',
  'cachedTokens',
  'totalTokens',
  'costUsd',
  'llmCalls',
  'toolCalls',
  'rfp',
  'rcount',
  'deltaIter',
  'pending',
  'iterUsage',
  'pausedUntil',
  'resuming',
  'viewPrefix',
  'viewFrom',
  'tv',
  'threadId',
  'tp',
] as const;

/** HMGET of STATE_FIELDS, back into a hash (absent fields left out). */
export function stateHash(values: ReadonlyArray<string | null>): Record<string, string> {
  const h: Record<string, string> = {};
  STATE_FIELDS.forEach((f, i) => {
    const v = values[i];
    if (v !== null && v !== undefined) h[f] = v;
  });
  return h;
}

export const OutputRepairSchema = z.object({ iteration: z.number().int().positive(), message: z.string() });
export type OutputRepair = z.infer<typeof OutputRepairSchema>;

const num = (v: string | undefined) => (v ? Number(v) : 0);

/** A field that must hold one of a schema's values: parsed, never cast (a bad value is state corruption). */
function oneOf<T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
  id: string,
  field: string,
  v: string | undefined,
): T {
  const r = schema.safeParse(v);
  if (!r.success)
    throw new Error(`run ${id}: state field ${field} holds '${String(v).slice(0, 40)}', not a value this build knows`);
  return r.data;
}
const orEmpty = <T>(
  schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } },
  id: string,
  field: string,
  v: string | undefined,
): T | '' => (v ? oneOf(schema, id, field, v) : '');
const json = <T>(v: string | undefined, dflt: T): T => (v ? (JSON.parse(v) as T) : dflt);

/** A JSON field that must parse, and (with a schema) hold that shape: anything else is state corruption. */
function parsedField<T>(id: string, field: string, v: string | undefined, schema?: z.ZodType<T>): T | undefined {
  if (v === undefined || v === '') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(v);
  } catch {
    throw new Error(`run ${id}: state field ${field} is not JSON`);
  }
  if (!schema) return value as T;
  const r = schema.safeParse(value);
  if (!r.success) throw new Error(`run ${id}: state field ${field} does not hold what this build writes there`);
  return r.data;
}

export function parseRunState(h: Record<string, string>): RunState | null {
  if (!h.id) return null;
  const v = num(h.v);
  if (v > SCHEMA_VERSION)
    throw new Error(`run ${h.id} has schemaVersion ${v}, newer than this build understands (${SCHEMA_VERSION})`);
  return {
    v,
    id: h.id,
    tenant: h.tenant ?? '',
    status: oneOf(RunStatusSchema, h.id, 'status', h.status),
    phase: oneOf(RunPhaseSchema, h.id, 'phase', h.phase),
    iteration: num(h.iteration),
    createdAt: num(h.createdAt),
    updatedAt: num(h.updatedAt),
    request: json(h.request, {} as RunRequest),
    model: json(h.model, {} as ModelSpec),
    mode: (h.mode as RunState['mode']) || 'interactive',
    metadata: json(h.metadata, {}),
    threadId: h.threadId || null,
    ...(h.tp ? { traceparent: h.tp } : {}),
    seq: num(h.seq),
    error: json(h.error, null),
    cancel: h.cancel ?? '',
    batch: json(h.batch, []),
    pendingFinal: orEmpty(FinalizeReasonSchema, h.id, 'pendingFinal', h.pendingFinal),
    callMode: orEmpty(CallModeSchema, h.id, 'callMode', h.callMode),
    owner: h.owner ?? '',
    stopReason: h.stopReason ? oneOf(StopReasonSchema, h.id, 'stopReason', h.stopReason) : null,
    output: h.output !== undefined && h.status === 'completed' ? h.output : null,
    outputJson:
      h.status === 'completed' ? parsedField(h.id, STATE_FIELD.outputJson, h[STATE_FIELD.outputJson]) : undefined,
    outputRepair: parsedField(h.id, STATE_FIELD.outputRepair, h[STATE_FIELD.outputRepair], OutputRepairSchema) ?? null,
    usage: {
      promptTokens: num(h.promptTokens),
      completionTokens: num(h.completionTokens),
      reasoningTokens: num(h.reasoningTokens),
      cachedTokens: num(h.cachedTokens),
      totalTokens: num(h.totalTokens),
      costUsd: Math.round(num(h.costUsd) * 1e8) / 1e8,
      llmCalls: num(h.llmCalls),
      toolCalls: num(h.toolCalls),
    },
    repeatFingerprint: h.rfp ?? '',
    repeatCount: num(h.rcount),
    deltaIter: num(h.deltaIter),
    pending: json(h.pending, []),
    iterUsage: json(h.iterUsage, {}),
    pausedUntil: num(h.pausedUntil),
    resuming: h.resuming === '1',
    viewPrefix: json(h.viewPrefix, []),
    viewFrom: num(h.viewFrom),
    tv: num(h.tv),
  };
}

/** `structured`: whether the run asked for structured output, when the caller read it without the request (listing). */
export function toSnapshot(
  s: RunState,
  extra: { messages?: Message[]; history?: Message[]; structured?: boolean } = {},
): RunSnapshot {
  const { structured = Boolean(s.request.output), ...more } = extra;
  return {
    id: s.id,
    status: s.status,
    iteration: s.iteration,
    createdAt: new Date(s.createdAt).toISOString(),
    updatedAt: new Date(s.updatedAt).toISOString(),
    model: s.model,
    mode: s.mode,
    stopReason: s.stopReason,
    output: s.output,
    threadId: s.threadId,
    // only runs that asked for structured output have the field (null until they complete with an answer)
    ...(structured ? { outputJson: s.outputJson ?? null } : {}),
    error: s.error ? { code: s.error.code, message: s.error.message } : null,
    pending: s.pending.map((p) => ({
      ...p,
      arguments: typeof p.arguments === 'string' ? argumentsForDisplay(p.arguments) : p.arguments,
    })),
    usage: s.usage,
    metadata: s.metadata,
    // the run's trace (SPEC §8), for a run created with tracing on and sampled: the console links it
    ...(traceIdOf(s.traceparent) ? { traceId: traceIdOf(s.traceparent) } : {}),
    ...more,
  };
}
