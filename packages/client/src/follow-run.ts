import { EventEnvelopeSchema, TERMINAL_EVENT_TYPES, type EventEnvelope } from '@agentloop/protocol';
import { AgentloopError, RETRYABLE_STATUS, errorOf } from './api-error.js';
import { checked, errorWithCause } from './http-transport.js';
import { sseFrames } from './sse.js';

const TERMINAL = new Set<string>(TERMINAL_EVENT_TYPES);
/** A connection that stays up this long ends an outage even without a new event (a paused run sends none). */
const STABLE_MS = 30_000;

export interface FollowOptions {
  /** Sent on every connection (e.g. authorization). */
  headers?: Record<string, string>;
  /** Follow from after this sequence number [0: the whole history]. */
  after?: number;
  signal?: AbortSignal;
  /** Reconnects in a row that bring no new event before giving up [10]. */
  maxAttempts?: number;
  /** How long one outage may last (from the drop to a connection that brings an event) before giving up [60 s]. */
  maxReconnectMs?: number;
  /** The first reconnect's delay; each later one of the same outage doubles it, up to maxDelayMs [250, 5000]. */
  baseDelayMs?: number;
  maxDelayMs?: number;
  /**
   * A connection that receives nothing for this long (or is not answered: during an outage, at most what is left of
   * maxReconnectMs) is dropped and reconnected; the server pings every 15 s [45 s].
   */
  idleTimeoutMs?: number;
  fetch?: typeof fetch;
  /** Told before each reconnect (e.g. to say so on a terminal). */
  onReconnect?: (r: { attempt: number; delayMs: number; reason: string; lastSeq: number }) => void;
}

/** The run's event stream was lost and could not be got back within the reconnect budget. */
export class FollowError extends Error {
  constructor(
    message: string,
    /** The last event received: a later follower resumes after it. */
    readonly lastSeq: number,
  ) {
    super(message);
    this.name = 'FollowError';
  }
}

/**
 * A run's events (SPEC §4) from `eventsUrl`, in order, each once, until its terminal event. A stream that drops before
 * it (a restarted api, a proxy's timeout, a silent connection) is reconnected with `Last-Event-ID`, with exponential
 * backoff, and events replayed again are skipped. Ends without a terminal event only when the server answers 204 (the
 * replay point is at or past it); throws AgentloopError for a final HTTP answer (401, 404, ...) and FollowError when an
 * outage outlasts `maxAttempts` or `maxReconnectMs`.
 */
export async function* followRun(eventsUrl: string, opts: FollowOptions = {}): AsyncGenerator<EventEnvelope> {
  const {
    maxAttempts = 10,
    maxReconnectMs = 60_000,
    baseDelayMs = 250,
    maxDelayMs = 5000,
    idleTimeoutMs = 45_000,
    signal,
  } = opts;
  const fetchImpl = opts.fetch ?? globalThis.fetch.bind(globalThis);
  let lastSeq = opts.after ?? 0;
  let failures = 0;
  let outageStart = 0;
  for (;;) {
    signal?.throwIfAborted();
    const conn = new AbortController();
    const onAbort = () => conn.abort(signal?.reason);
    signal?.addEventListener('abort', onAbort, { once: true });
    const opened = Date.now();
    let progressed = false;
    let reason: string;
    let retryAfterMs = 0;
    try {
      const headers = {
        accept: 'text/event-stream',
        ...opts.headers,
        ...(lastSeq > 0 ? { 'last-event-id': String(lastSeq) } : {}),
      };
      // an api that accepts the connection and never answers: within an outage, no longer than what is left of it
      const answerWithinMs = failures
        ? Math.max(1000, Math.min(idleTimeoutMs, maxReconnectMs - (opened - outageStart)))
        : idleTimeoutMs;
      const answerTimer = setTimeout(
        () => conn.abort(new IdleTimeout(`no answer within ${answerWithinMs} ms`)),
        answerWithinMs,
      );
      const res = await fetchImpl(eventsUrl, { headers, signal: conn.signal }).finally(() => clearTimeout(answerTimer));
      if (res.status === 204) return;
      if (res.ok && res.body) {
        for await (const frame of sseFrames(withIdleTimeout(res.body, idleTimeoutMs, conn))) {
          const e = envelopeOf(frame.data);
          if (!(e.seq > lastSeq)) continue; // replayed again: seen already
          lastSeq = e.seq;
          progressed = true;
          yield e;
          if (TERMINAL.has(e.type)) return;
        }
        reason = 'the stream ended before the run did';
      } else if (RETRYABLE_STATUS.has(res.status)) {
        const err = await errorOf(res);
        reason = `HTTP ${res.status} ${err.code}`;
        retryAfterMs = err.retryAfterMs ?? 0;
      } else {
        throw await errorOf(res);
      }
    } catch (err) {
      if (signal?.aborted || err instanceof AgentloopError) throw err;
      reason = conn.signal.reason instanceof IdleTimeout ? conn.signal.reason.message : errorWithCause(err);
    } finally {
      signal?.removeEventListener('abort', onAbort);
      conn.abort(); // releases the connection
    }
    const now = Date.now();
    if (progressed || now - opened >= STABLE_MS) failures = 0;
    if (failures++ === 0) outageStart = now;
    const delayMs = Math.max(Math.min(baseDelayMs * 2 ** (failures - 1), maxDelayMs), retryAfterMs);
    if (failures > maxAttempts || now - outageStart + delayMs > maxReconnectMs)
      throw new FollowError(
        `lost the event stream after event ${lastSeq} (${reason}) and could not get it back: ${failures} attempt(s) in ${now - outageStart} ms`,
        lastSeq,
      );
    opts.onReconnect?.({ attempt: failures, delayMs, reason, lastSeq });
    await sleep(delayMs, signal);
  }
}

/** A frame's envelope; a frame that is none is the server's fault and comes back the same on a reconnect: thrown. */
function envelopeOf(data: string): EventEnvelope {
  let value: unknown;
  try {
    value = JSON.parse(data);
  } catch {
    throw new AgentloopError(200, 'invalid_response', `an event frame is not JSON: ${data.slice(0, 200)}`);
  }
  return checked(EventEnvelopeSchema, value, 200, 'an event frame');
}

class IdleTimeout extends Error {}

/**
 * The body's chunks; waiting longer than `ms` for one aborts the connection (the consumer's own time does not count).
 * Read with getReader(): Safari's streams are not async iterable.
 */
async function* withIdleTimeout(
  body: ReadableStream<Uint8Array>,
  ms: number,
  conn: AbortController,
): AsyncGenerator<Uint8Array> {
  const reader = body.getReader();
  try {
    for (;;) {
      const timer = setTimeout(() => conn.abort(new IdleTimeout(`nothing received for ${ms} ms`)), ms);
      let next: Awaited<ReturnType<typeof reader.read>>;
      try {
        next = await reader.read();
      } finally {
        clearTimeout(timer);
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
