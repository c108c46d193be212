import type { Response } from 'express';
import { TERMINAL_EVENT_TYPES } from '@agentloop/protocol';
import { STREAM_LEASE_MS, type EventHub, type RunStore, type StreamLease } from '@agentloop/runtime';

const TERMINAL = new Set<string>(TERMINAL_EVENT_TYPES);
/** How long one SSE handler's watch lease lasts; it renews it three times as often. */
const WATCH_LEASE_MS = 30_000;

let open = 0;
/** Event streams open in this process (set up, or being set up, and not closed yet). */
export const openEventStreams = (): number => open;

/**
 * The event streams of one api server, which its shutdown ends before it closes the connections: a stream's
 * resources (its `streams` slot above all) are released while Redis is still connected — the responses' own
 * `close` events come after the server's — and its client reconnects elsewhere with Last-Event-ID.
 */
export class ServerEventStreams {
  private readonly closers = new Set<() => void>();

  add(close: () => void): () => void {
    this.closers.add(close);
    return () => this.closers.delete(close);
  }

  endAll(): void {
    for (const close of [...this.closers]) close();
  }
}

export interface StreamOptions {
  /** The tenant's stream slot (its `streams` limit): renewed with the watch lease, released however the stream ends. */
  slot?: StreamLease;
  /** The server's streams, to end at its shutdown. */
  server?: ServerEventStreams;
}

/** Until the response's buffer drains (or the client leaves): a replay holds about one page in memory. */
const drained = (res: Response) =>
  new Promise<void>((resolve) => {
    const done = () => {
      res.off('drain', done).off('close', done);
      resolve();
    };
    res.on('drain', done).on('close', done);
  });

/**
 * Streams a run's events as SSE: replays everything after `after` (a page of events per read, each page written out
 * before the next is read), then follows live until the terminal event.
 * Live updates come from one pub/sub notification per write; each notification re-reads from the last sent seq,
 * so nothing is skipped or sent twice. A slow poll covers notifications lost to a reconnect. Scripts notify only
 * while a client holds the run's watch lease, which this handler takes before its first read and renews; a renewal
 * that finds the run gone (retention) ends the stream, as no event will come.
 *
 * The client may leave at any point, during the setup's awaits too (its `close` event fired then, or before this
 * handler was called): everything the stream holds is registered with `hold`, which releases it at once when the
 * stream is already closed, and `close` releases all of it, once.
 */
export async function streamEvents(
  res: Response,
  runId: string,
  after: number,
  store: RunStore,
  hub: EventHub,
  opts: StreamOptions = {},
): Promise<void> {
  const { slot, server } = opts;
  let last = after;
  let closed = false;
  let busy = false;
  let again = false;
  const releases: Array<() => void> = [];
  open++;
  const close = () => {
    if (closed) return;
    closed = true;
    open--;
    for (const release of releases.splice(0)) release();
    res.end();
  };
  const hold = (release: () => void) => {
    if (closed) release();
    else releases.push(release);
  };
  if (slot) hold(() => slot.release());
  if (server) hold(server.add(close));
  const pump = async (): Promise<void> => {
    if (closed) return;
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    try {
      do {
        again = false;
        // a page at a time until caught up, each written out before the next is read
        for (;;) {
          const from = last;
          const page = await store.eventsRaw(runId, from);
          if (closed) return;
          for (const raw of page.events) {
            const e = JSON.parse(raw) as { seq: number; type: string };
            if (e.seq <= last) continue; // never twice, never out of order
            res.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${raw}\n\n`);
            last = e.seq;
            if (TERMINAL.has(e.type)) return close();
          }
          // a seq the page covered without its event (its field is missing) never comes
          last = Math.max(last, page.through);
          if (last <= from || page.through >= page.last) break;
          if (res.writableNeedDrain) await drained(res);
        }
      } while (again && !closed);
    } catch {
      close();
    } finally {
      busy = false;
    }
  };
  // 'close': the client left (or the response ended); a client that left before this listener existed is seen by
  // `destroyed` (the event does not fire again)
  res.on('close', close);
  if (res.destroyed) return close();
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': agentloop events\n\n');
  try {
    const unsubscribe = await hub.subscribe(store.keys.run(runId).eventsChannel, () => void pump());
    hold(() => void unsubscribe());
    // the lease before the first read: a script either ran before it (the read sees its events) or sees it (and
    // notifies). 'gone': the run's keys are gone, no event will ever come; a Redis error: the next renewal retries
    const watch = async () => {
      if (!closed && !(await store.watch(runId, Date.now() + WATCH_LEASE_MS).catch(() => true))) close();
    };
    await watch();
    if (closed) return;
    const renew = () => {
      void watch();
      if (!closed) slot?.renew().catch(() => undefined); // a failed renewal: the next one retries (the lease outlasts two)
    };
    for (const [fn, ms] of [
      [renew, Math.min(WATCH_LEASE_MS, STREAM_LEASE_MS) / 3],
      [() => void pump(), 2000],
      [() => !closed && res.write(': ping\n\n'), 15_000],
    ] as const) {
      const t = setInterval(fn, ms);
      hold(() => clearInterval(t));
    }
    await pump();
  } catch (err) {
    close();
    throw err;
  }
}
