/**
 * Ids the next span must take instead of random ones, set only around one synchronous startSpan: a run's root span
 * gets the ids its traceparent was stored with (minted before the run existed), and a resumed run's span stays in
 * the run's trace while it links to the root instead of hanging under it (SPEC §8).
 */
export const pinned: { traceId: string | null; spanId: string | null } = { traceId: null, spanId: null };
