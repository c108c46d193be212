import { randomBytes } from 'node:crypto';
import {
  SpanKind,
  SpanStatusCode,
  TraceFlags,
  context,
  trace,
  type Attributes,
  type Span,
  type Context,
} from '@opentelemetry/api';
import type { ModelResponse } from '@agentloop/llm';
import type { RunRequest } from '@agentloop/protocol';
import { contextOf, formatTraceparent, parseTraceparent } from './traceparent.js';
import { tracingState } from './tracing-state.js';

const tracer = () => trace.getTracer('agentloop');

/** A run as its spans name it: GenAI semantic conventions plus agentloop's own ids (SPEC §8). */
export interface TracedRun {
  id: string;
  tenant: string;
  request: Pick<RunRequest, 'model'>;
}

function runAttributes(run: TracedRun): Attributes {
  return {
    'gen_ai.provider.name': run.request.model.provider,
    'gen_ai.request.model': run.request.model.name,
    'gen_ai.conversation.id': run.id,
    'agentloop.run.id': run.id,
    'agentloop.tenant.id': run.tenant,
  };
}

/** The parent of a job's span: the span active here (the job's traceparent), else the run's root as stored; null when neither is known. */
function parentContext(rootTp: string | undefined): Context | null {
  const active = context.active();
  if (trace.getSpanContext(active)) return active;
  return parseTraceparent(rootTp) ? contextOf(rootTp) : null;
}

/**
 * Marks the span failed. `code`: what the status says with content capture off — an error's message is content (a
 * tool's error text is its result, a provider's can echo the prompt), so it is recorded only with capture on (SPEC §8).
 */
function failed(span: Span, err: unknown, code: string): void {
  const message = err instanceof Error ? err.message : String(err);
  span.setStatus({ code: SpanStatusCode.ERROR, message: tracingState.captureContent ? message : code });
  span.setAttribute('error.type', err instanceof Error ? err.name : 'error');
}

/** An LlmError's kind (rate_limit, server, …), else the error's name. */
function errorCode(err: unknown): string {
  if (!(err instanceof Error)) return 'error';
  const kind = (err as { kind?: unknown }).kind;
  return typeof kind === 'string' ? kind : err.name;
}

const randomHex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * The ids of a run's root span `invoke_agent`, minted at intake: its traceparent is stored with the run (field `tp`)
 * and carried by every job the run publishes. The span itself is recorded when the run's first segment ends
 * (segment-spans.ts), so it covers the run until it first parks or ends. Null when tracing is off.
 */
export function newRunTrace(): { traceparent: string } | null {
  if (!tracingState.on) return null;
  const ids = { traceId: randomHex(16), spanId: randomHex(8) };
  // the flag is the root sampler's decision, so the run's later spans (parent-based) are kept or dropped with it
  return {
    traceparent: formatTraceparent({
      ...ids,
      traceFlags: tracingState.sampled(ids.traceId) ? TraceFlags.SAMPLED : TraceFlags.NONE,
    }),
  };
}

/** One model call of the loop: `chat <model>` (null when tracing is off). `input`: the messages sent, recorded only when content capture is on. */
export function startChatSpan(
  run: TracedRun & { traceparent?: string },
  iteration: number,
  input: () => unknown,
): Span | null {
  const parent = tracingState.on ? parentContext(run.traceparent) : null;
  if (!parent) return null; // off, or a run created with tracing off: no stray trace of its own
  const span = tracer().startSpan(
    `chat ${run.request.model.name}`,
    {
      kind: SpanKind.CLIENT,
      attributes: { 'gen_ai.operation.name': 'chat', ...runAttributes(run), 'agentloop.iteration': iteration },
    },
    parent,
  );
  if (tracingState.captureContent) span.setAttribute('gen_ai.input.messages', JSON.stringify(input()));
  return span;
}

export function endChatSpan(span: Span | null, outcome: { response: ModelResponse } | { error: unknown }): void {
  if (!span) return;
  if ('error' in outcome) failed(span, outcome.error, errorCode(outcome.error));
  else {
    const r = outcome.response;
    span.setAttributes({
      'gen_ai.response.model': r.model,
      'gen_ai.usage.input_tokens': r.usage.promptTokens,
      'gen_ai.usage.output_tokens': r.usage.completionTokens,
      'gen_ai.response.finish_reasons': [r.finishReason],
    });
    span.setAttribute('agentloop.response.provider', r.provider); // differs from gen_ai.provider.name after a fallback
    if (tracingState.captureContent) span.setAttribute('gen_ai.output.messages', JSON.stringify([r.message]));
  }
  span.end();
}

/** One tool execution: `execute_tool <tool>` (null when tracing is off). */
export function startToolSpan(
  call: { runId: string; tenantId: string; callId: string; name: string; arguments: string },
  pool: string,
  rootTp?: string,
): Span | null {
  const parent = tracingState.on ? parentContext(rootTp) : null;
  if (!parent) return null;
  const span = tracer().startSpan(
    `execute_tool ${call.name}`,
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': call.name,
        'gen_ai.tool.call.id': call.callId,
        'gen_ai.tool.type': 'function',
        'gen_ai.conversation.id': call.runId,
        'agentloop.run.id': call.runId,
        'agentloop.tenant.id': call.tenantId,
        'agentloop.tool.pool': pool,
      },
    },
    parent,
  );
  if (tracingState.captureContent) span.setAttribute('gen_ai.tool.call.arguments', call.arguments);
  return span;
}

/** Runs `fn` with the span active (its log lines name it; what it starts hangs under it); a plain call without one. */
export function inSpan<T>(span: Span | null, fn: () => T): T {
  return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
}

export function endToolSpan(
  span: Span | null,
  outcome: { status: string; content?: string; error?: { code: string; message: string } },
): void {
  if (!span) return;
  span.setAttribute('agentloop.tool.status', outcome.status);
  if (outcome.error) failed(span, new Error(`${outcome.error.code}: ${outcome.error.message}`), outcome.error.code);
  if (tracingState.captureContent && outcome.content !== undefined)
    span.setAttribute('gen_ai.tool.call.result', outcome.content);
  span.end();
}

/** A compressor's summary of a run's older turns: `compress` under the run's trace (null when tracing is off or the run has none). */
export function startCompressSpan(
  run: { id: string; tenant: string },
  iteration: number,
  parentTp: string | undefined,
): Span | null {
  const parent = tracingState.on ? parentContext(parentTp) : null;
  if (!parent) return null;
  return tracer().startSpan(
    'compress',
    {
      kind: SpanKind.INTERNAL,
      attributes: {
        'gen_ai.conversation.id': run.id,
        'agentloop.run.id': run.id,
        'agentloop.tenant.id': run.tenant,
        'agentloop.iteration': iteration,
      },
    },
    parent,
  );
}

export function endCompressSpan(
  span: Span | null,
  outcome: { outcome: string; tokensBefore?: number; tokensAfter?: number; reason?: string } | { error: unknown },
): void {
  if (!span) return;
  if ('error' in outcome) failed(span, outcome.error, errorCode(outcome.error));
  else {
    span.setAttribute('agentloop.compress.outcome', outcome.outcome);
    if (outcome.tokensBefore !== undefined)
      span.setAttributes({
        'agentloop.compress.tokens_before': outcome.tokensBefore,
        'agentloop.compress.tokens_after': outcome.tokensAfter ?? 0,
      });
    if (outcome.outcome === 'failed')
      span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.reason ?? 'failed' });
  }
  span.end();
}
