import {
  MAX_JSON_DEPTH,
  clipText,
  problemList,
  resultContent,
  textJsonDepth,
  toolErrorOutcome,
  tryParseJson,
  type ToolOutcome,
} from '@agentloop/protocol';
import type { RegisteredTool } from './registry.js';
import { ToolFailure, type ToolContext } from './tool-definition.js';
import { capText } from '@agentloop/llm';

/** Deepest result a tool may return (Redis' cjson refuses 1000 levels; results this deep are not meant for a model). */
const MAX_RESULT_DEPTH = 256;

export interface ExecuteOptions {
  /** Hard cap on a result's serialized size: bigger results are answered result_too_large. */
  maxResultBytes: number;
  /** Cap of the text the model sees (head + marker + tail), in tokens. */
  maxResultTokens: number;
  /** Counts tokens for the cap (default: 4 characters a token). */
  countTokens?: (text: string) => number;
}

/**
 * Runs one call and turns every way it can go wrong into a structured outcome the model can recover from:
 * unknown tool, arguments that are not a JSON object (or nest deeper than 64), schema violations, thrown errors,
 * timeouts and oversized results. Never throws (except when the caller's signal aborts: then `cancelled`).
 */
export async function executeToolCall(
  tool: RegisteredTool | undefined,
  name: string,
  rawArgs: string,
  ctx: Omit<ToolContext, 'signal'>,
  signal: AbortSignal,
  opts: ExecuteOptions,
): Promise<ToolOutcome> {
  if (!tool)
    return toolErrorOutcome(
      'unknown_tool',
      `Unknown tool '${clipText(name, 100)}'. Use one of the tools you were given.`,
    );
  if (textJsonDepth(rawArgs) > MAX_JSON_DEPTH)
    return toolErrorOutcome('invalid_arguments', `arguments nest deeper than ${MAX_JSON_DEPTH} levels`);
  const parsed = tryParseJson(rawArgs.trim() === '' ? '{}' : rawArgs);
  if (!parsed.ok)
    return toolErrorOutcome('invalid_arguments', `arguments are not valid JSON: ${clipText(rawArgs, 200)}`);
  if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value))
    return toolErrorOutcome('invalid_arguments', 'arguments must be a JSON object');
  const valid = tool.validate(parsed.value);
  if (!valid.ok)
    return toolErrorOutcome(
      'invalid_arguments',
      `arguments do not match the schema of ${name}: ${problemList(valid.problems)}`,
    );

  // a caller that already gave up (cancel, hand-back) gets no call started: the tool never ran
  if (signal.aborted) return toolErrorOutcome('cancelled', 'The run was cancelled before this call ran.');
  const limit = callSignal(signal, tool.entry.timeoutMs);
  const combined = limit.signal;
  const t0 = performance.now();
  const elapsed = () => Math.round(performance.now() - t0);
  try {
    const result = await raceAbort(
      Promise.resolve().then(() => tool.def.execute(valid.value, { ...ctx, signal: combined })),
      combined,
    );
    let serialized: string;
    try {
      serialized = resultContent(result);
    } catch {
      return toolErrorOutcome('tool_error', 'the tool returned a value that is not JSON-serializable', {
        durationMs: elapsed(),
      });
    }
    // stored inside the call's outcome, which Redis' Lua decodes: past its nesting limit the run could not go on
    if (textJsonDepth(serialized) > MAX_RESULT_DEPTH)
      return executed(
        toolErrorOutcome('tool_error', `the tool's result is nested deeper than ${MAX_RESULT_DEPTH} levels`, {
          durationMs: elapsed(),
        }),
      );
    if (Buffer.byteLength(serialized) > opts.maxResultBytes)
      return executed(
        toolErrorOutcome(
          'result_too_large',
          `the result is ${Buffer.byteLength(serialized)} bytes, over the limit of ${opts.maxResultBytes}`,
          { durationMs: elapsed() },
        ),
      );
    return {
      status: 'completed',
      content: capText(serialized, opts.maxResultTokens, opts.countTokens),
      result,
      durationMs: elapsed(),
      executed: true,
    };
  } catch (e) {
    if (signal.aborted)
      return executed(
        toolErrorOutcome('cancelled', 'The run was cancelled while this call was running.', { durationMs: elapsed() }),
      );
    if (limit.timedOut())
      return executed(
        toolErrorOutcome('timeout', `the tool did not finish within ${tool.entry.timeoutMs} ms`, {
          durationMs: elapsed(),
        }),
      );
    if (e instanceof ToolFailure)
      return executed(
        toolErrorOutcome(e.code, e.message, {
          durationMs: elapsed(),
          ...(e.retryable === undefined ? {} : { retryable: e.retryable }),
        }),
      );
    // a thrown message is capped like a result: it enters the transcript (and the events) as the model's tool result
    return executed(
      toolErrorOutcome(
        'tool_error',
        capText(e instanceof Error ? e.message : String(e), Math.min(2_000, opts.maxResultTokens), opts.countTokens),
        { durationMs: elapsed() },
      ),
    );
  } finally {
    limit.release();
  }
}

/**
 * The signal a call's tool gets: aborted with the caller's reason (cancel, hand-back) or with a TimeoutError after
 * `timeoutMs`, like `AbortSignal.any([signal, AbortSignal.timeout(ms)])` — without a composite signal and a timeout
 * signal per call (both costly to create and to listen to). Its life is the call's: `release` (the call is over)
 * stops the timer and the forwarding and aborts it, so work a tool left running past its result is told to stop.
 */
function callSignal(
  signal: AbortSignal,
  timeoutMs: number,
): { signal: AbortSignal; timedOut: () => boolean; release: () => void } {
  const ac = new AbortController();
  let timedOut = false;
  const forward = () => ac.abort(signal.reason);
  const timer = setTimeout(() => {
    timedOut = true;
    ac.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError'));
  }, timeoutMs);
  signal.addEventListener('abort', forward, { once: true });
  return {
    signal: ac.signal,
    timedOut: () => timedOut,
    release: () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', forward);
      if (!ac.signal.aborted) ac.abort(CALL_OVER);
    },
  };
}

/** Settles as soon as the signal aborts, even when the tool ignores it. */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

const executed = (o: ToolOutcome): ToolOutcome => ({ ...o, executed: true });
/** The reason a call's signal ends with when the call is over (one object: a DOMException costs ~15 µs to make). */
const CALL_OVER = new DOMException('The call is over', 'AbortError');
