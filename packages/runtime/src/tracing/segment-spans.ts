import { randomBytes } from 'node:crypto';
import { SpanKind, SpanStatusCode, type Attributes, type Link, type SpanContext } from '@opentelemetry/api';
import { startPinned } from './pinned-trace.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';
import { tracingState } from './tracing-state.js';

/**
 * A run's `invoke_agent` spans cover its segments (SPEC §8): the root from creation to the first park or end, each
 * resumed segment from its resume to the next park or end. Their ids are minted when a segment starts (the root's at
 * intake, stored as the state field `tp`; a resumed one's at the resume, stored as `seg`) and carried by every job of
 * the segment, so what runs in it hangs under an id; the span itself is recorded once, when the segment ends, by the
 * process whose step ended it (RunStore: a checkpoint that parks or ends the run, endRun, a parked run's cancel, a run
 * created failed).
 */

/** The state field of the current resumed segment: `<iteration>|<traceparent>|<start ms>` (absent before the first resume). */
export const SEGMENT_FIELD = 'seg';
/** What the end of a segment reads of the run (one HMGET, only with tracing on). */
export const SEGMENT_READ = [
  'tp',
  SEGMENT_FIELD,
  'createdAt',
  'tenant',
  'model',
  'status',
  'stopReason',
  'error',
  'promptTokens',
  'completionTokens',
  'iteration',
] as const;
export type SegmentRead = Record<(typeof SEGMENT_READ)[number], string | null>;
export type SegmentEnd = 'paused' | 'completed' | 'failed' | 'cancelled';

interface Segment {
  traceparent: string;
  iteration: number;
  startTime: number;
}

export function parseSegment(v: string | null | undefined): Segment | null {
  const [it, tp, start] = (v ?? '').split('|');
  if (!parseTraceparent(tp) || !/^\d+$/.test(it ?? '') || !/^\d+$/.test(start ?? '')) return null;
  return { traceparent: tp!, iteration: Number(it), startTime: Number(start) };
}

/** The traceparent a run's jobs join when theirs is missing: its current resumed segment's, else its root's. */
export function currentSegmentTp(st: { tp?: string | null; seg?: string | null } | null): string | undefined {
  return parseSegment(st?.seg)?.traceparent ?? st?.tp ?? undefined;
}

/**
 * A parked run resumes at `iteration`: the ids of its resumed segment's span, in the run's trace (`rootTp`), as the
 * `seg` value to store and the traceparent its jobs carry. `current`: the stored `seg`; a resume published again (by
 * the reconciler) keeps the segment it already has. Null when the run has no stored root (created with tracing off).
 */
export function resumeSegment(
  rootTp: string | undefined,
  current: string | null | undefined,
  iteration: number,
  now = Date.now(),
): { traceparent: string; seg: string; fresh: boolean } | null {
  const root = parseTraceparent(rootTp);
  if (!root) return null;
  const kept = parseSegment(current);
  if (kept && kept.iteration === iteration) return { traceparent: kept.traceparent, seg: current!, fresh: false };
  const traceparent = formatTraceparent({ ...root, spanId: randomBytes(8).toString('hex') });
  return { traceparent, seg: `${iteration}|${traceparent}|${now}`, fresh: true };
}

const num = (v: string | null) => (v && Number.isFinite(Number(v)) ? Number(v) : 0);

function errorOf(v: string | null): { code: string; message: string } | null {
  try {
    const e = v ? (JSON.parse(v) as { code?: unknown; message?: unknown }) : null;
    return e && typeof e.code === 'string' ? { code: e.code, message: String(e.message ?? '') } : null;
  } catch {
    return null;
  }
}

/** How a segment's end is told: the run as read right after the step, and once-only claims (HSETNX) of a span id or of the run's end. */
export interface SegmentStore {
  read(fields: typeof SEGMENT_READ): Promise<SegmentRead | null>;
  claim(what: string): Promise<boolean>;
}

/**
 * The end of a segment, as RunStore reports it: each step that parks or ends a run calls this once, on an outcome
 * only that step's script answers (a redelivered step answers stale). The run's end and the segment's span id are
 * claimed first, so each span is recorded once whatever else calls: a run ended while parked (cancelled, or its approval expired) finds its
 * last segment recorded at the park, and gets a closing `invoke_agent` span of no length, linked to the root, that
 * says how it ended. `parkedAt`: the iteration a park parked at; a run resumed before the park's read keeps its parked
 * segment's ids while the resume has not stored its own segment (`seg` of that iteration), and is left unrecorded
 * after (never recorded with the next segment's ids). Nothing when tracing is off (one branch, no read), the run has no
 * root, or it has moved on otherwise. A failure never fails the step.
 */
export async function endSegment(
  runId: string,
  ended: SegmentEnd,
  store: SegmentStore,
  parkedAt?: number,
  now = Date.now,
): Promise<void> {
  if (!tracingState.on) return;
  try {
    const st = await store.read(SEGMENT_READ);
    const root = parseTraceparent(st?.tp ?? undefined);
    if (!st || !root) return;
    const seg = parseSegment(st[SEGMENT_FIELD]);
    // a park already resumed (or ended) by the time of this read: still the parked segment's, unless the resume's came in
    if (st.status !== ended && !(ended === 'paused' && parkedAt !== undefined && (!seg || seg.iteration < parkedAt)))
      return;
    const ids = seg ? parseTraceparent(seg.traceparent)! : root;
    const endTime = now();
    if (ended !== 'paused' && !(await store.claim('end'))) return; // the run's end was told already
    if (await store.claim(ids.spanId))
      recordSegment(runId, ended, st, {
        ids,
        root,
        startTime: seg ? seg.startTime : num(st.createdAt) || endTime,
        endTime,
        resumed: Boolean(seg),
      });
    else if (ended !== 'paused')
      recordSegment(runId, ended, st, {
        ids: { traceId: root.traceId },
        root,
        startTime: endTime,
        endTime,
        resumed: true,
        parked: true,
      });
  } catch {
    // tracing is best effort: the step it describes already happened
  }
}

interface SegmentSpan {
  /** The span's ids (a closing span of a parked run gets a fresh span id). */
  ids: { traceId: string; spanId?: string };
  root: SpanContext;
  startTime: number;
  endTime: number;
  /** Not the root: linked to it. */
  resumed: boolean;
  /** A closing span: the run ended while parked. */
  parked?: boolean;
}

function recordSegment(runId: string, ended: SegmentEnd, st: SegmentRead, span: SegmentSpan): void {
  let model: { provider?: string; name?: string } = {};
  try {
    model = st.model ? (JSON.parse(st.model) as typeof model) : {};
  } catch {
    // a run whose model is unreadable still gets its span
  }
  const error = ended === 'failed' ? errorOf(st.error) : null;
  const attributes: Attributes = {
    'gen_ai.operation.name': 'invoke_agent',
    ...(model.provider ? { 'gen_ai.provider.name': model.provider } : {}),
    ...(model.name ? { 'gen_ai.request.model': model.name } : {}),
    'gen_ai.conversation.id': runId,
    'agentloop.run.id': runId,
    'agentloop.tenant.id': st.tenant ?? '',
    'agentloop.run.status': ended,
    'gen_ai.response.finish_reasons': [st.stopReason || ended],
    // the run's totals so far (a resumed segment's include the segments before it)
    'gen_ai.usage.input_tokens': num(st.promptTokens),
    'gen_ai.usage.output_tokens': num(st.completionTokens),
    'agentloop.iteration': num(st.iteration),
    ...(span.resumed ? { 'agentloop.resumed': true } : {}),
    ...(span.parked ? { 'agentloop.ended_parked': true } : {}),
    ...(error ? { 'error.type': error.code } : {}),
  };
  const links: Link[] = span.resumed ? [{ context: span.root, attributes: { 'agentloop.link': 'run_root' } }] : [];
  const s = startPinned(span.ids, 'invoke_agent', {
    kind: SpanKind.INTERNAL,
    startTime: span.startTime,
    links,
    attributes,
  });
  if (error) s.setStatus({ code: SpanStatusCode.ERROR, message: `${error.code}: ${error.message}` });
  s.end(Math.max(span.endTime, span.startTime));
}
