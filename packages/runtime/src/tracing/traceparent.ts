import { ROOT_CONTEXT, context, trace, TraceFlags, type Context, type SpanContext } from '@opentelemetry/api';
import { tracingState } from './tracing-state.js';

const TRACEPARENT_RE = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** A W3C traceparent (`00-<trace id>-<span id>-<flags>`) as a remote span context; null when malformed or all zeros. */
export function parseTraceparent(tp: string | undefined): SpanContext | null {
  const m = tp ? TRACEPARENT_RE.exec(tp) : null;
  if (!m || /^0+$/.test(m[1]!) || /^0+$/.test(m[2]!)) return null;
  return { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16) & TraceFlags.SAMPLED, isRemote: true };
}

export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & TraceFlags.SAMPLED}`;
}

/** The trace id a traceparent names, when its run is sampled (an exemplar must lead to a stored trace); '' otherwise. */
export function traceIdOf(tp: string | undefined): string {
  const sc = parseTraceparent(tp);
  return sc && sc.traceFlags & TraceFlags.SAMPLED ? sc.traceId : '';
}

/** The span context active here as a traceparent, for the jobs published from here (undefined when tracing is off or none is active). */
export function activeTraceparent(): string | undefined {
  if (!tracingState.on) return undefined;
  const sc = trace.getSpanContext(context.active());
  return sc && trace.isSpanContextValid(sc) ? formatTraceparent(sc) : undefined;
}

/**
 * The trace a job's spans, published jobs and log lines join: its own `trace`, else (tracing on) the root stored with
 * the run — a job published without one (by a reconciler, or a thread's relay starting its next run) still joins it.
 */
export async function traceOfJob(
  trace: string | undefined,
  storedRoot: () => Promise<string | null | undefined>,
): Promise<string | undefined> {
  if (trace || !tracingState.on) return trace;
  return (await storedRoot()) ?? undefined;
}

/** A context whose parent span is the traceparent's (ROOT_CONTEXT when there is none). */
export function contextOf(tp: string | undefined): Context {
  const sc = parseTraceparent(tp);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

/**
 * Runs `fn` with the traceparent as its active parent: the spans it starts and the jobs it publishes join that trace,
 * and its log lines carry the trace id. A plain call when tracing is off or there is no traceparent.
 */
export function withTraceparent<T>(tp: string | undefined, fn: () => T): T {
  if (!tracingState.on || !tp) return fn();
  const sc = parseTraceparent(tp);
  return sc ? context.with(trace.setSpanContext(ROOT_CONTEXT, sc), fn) : fn();
}

/** pino mixin: the active trace's ids on every log line written inside a run's job (nothing when tracing is off). */
export function traceLogFields(): Record<string, string> {
  if (!tracingState.on) return {};
  const sc = trace.getSpanContext(context.active());
  return sc && trace.isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}
