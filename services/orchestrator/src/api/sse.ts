import type { Request, Response } from 'express';
import { TERMINAL_EVENT_TYPES } from '@agentloop/protocol';
import type { EventHub, RunStore } from '@agentloop/runtime';

const TERMINAL = new Set<string>(TERMINAL_EVENT_TYPES);
/** How long one SSE handler's watch lease lasts; it renews it three times as often. */
const WATCH_LEASE_MS = 30_000;

/**
 * Streams a run's events as SSE: replays everything after `after`, then follows live until the terminal event.
 * Live updates come from one pub/sub notification per write; each notification re-reads from the last sent seq,
 * so nothing is skipped or sent twice. A slow poll covers notifications lost to a reconnect. Scripts notify only
 * while a client holds the run's watch lease, which this handler takes before its first read and renews.
 */
export async function streamEvents(req: Request, res: Response, runId: string, after: number, store: RunStore, hub: EventHub): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  res.write(': agentloop events\n\n');
  let last = after;
  let closed = false;
  let busy = false;
  let again = false;
  let unsubscribe: (() => Promise<void>) | null = null;
  const timers: NodeJS.Timeout[] = [];
  const close = () => {
    if (closed) return;
    closed = true;
    for (const t of timers) clearInterval(t);
    void unsubscribe?.();
    res.end();
  };
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
        const raws = await store.eventsRaw(runId, last);
        for (const raw of raws) {
          const e = JSON.parse(raw) as { seq: number; type: string };
          if (e.seq !== last + 1) break; // never send out of order
          res.write(`id: ${e.seq}\nevent: ${e.type}\ndata: ${raw}\n\n`);
          last = e.seq;
          if (TERMINAL.has(e.type)) return close();
        }
      } while (again && !closed);
    } catch {
      close();
    } finally {
      busy = false;
    }
  };
  req.on('close', close);
  unsubscribe = await hub.subscribe(store.keys.run(runId).eventsChannel, () => void pump());
  // the lease before the first read: a script either ran before it (the read sees its events) or sees it (and notifies)
  const watch = () => store.watch(runId, Date.now() + WATCH_LEASE_MS).catch(() => false);
  await watch();
  timers.push(setInterval(() => void watch(), WATCH_LEASE_MS / 3));
  timers.push(setInterval(() => void pump(), 2000));
  timers.push(setInterval(() => !closed && res.write(': ping\n\n'), 15_000));
  await pump();
}
