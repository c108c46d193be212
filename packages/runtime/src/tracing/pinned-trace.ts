import { trace, type Span, type SpanOptions } from '@opentelemetry/api';

/**
 * Ids the next span must take instead of random ones, set only around one synchronous startSpan: a run's root span
 * gets the ids its traceparent was stored with (minted before the run existed), and a resumed run's span stays in
 * the run's trace while it links to the root instead of hanging under it (SPEC §8).
 */
export const pinned: { traceId: string | null; spanId: string | null } = { traceId: null, spanId: null };

/** Starts a span with pinned ids (see above), with no parent: the root sampler decides by its trace id, as it did for the run's traceparent. */
export function startPinned(ids: { traceId: string; spanId?: string }, name: string, options: SpanOptions): Span {
  pinned.traceId = ids.traceId;
  pinned.spanId = ids.spanId ?? null;
  try {
    return trace.getTracer('agentloop').startSpan(name, { ...options, root: true });
  } finally {
    pinned.traceId = null;
    pinned.spanId = null;
  }
}
