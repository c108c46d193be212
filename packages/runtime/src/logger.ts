import { pino, type Logger } from 'pino';
import { traceLogFields } from './tracing/traceparent.js';

export type { Logger };

/** Log lines written inside a run's job carry its trace id (`trace_id`, `span_id`) when tracing is on (SPEC §8). */
export function createLogger(level: string, bindings: Record<string, unknown> = {}): Logger {
  return pino(
    { level, base: { pid: process.pid, ...bindings }, mixin: traceLogFields },
    pino.destination({ fd: 2, sync: false }),
  );
}
