import type { Request, Response } from 'express';
import { TERMINAL_EVENT_TYPES } from '@agentloop/protocol';
import type { EventHub, RunStore } from '@agentloop/runtime';

const TERMINAL = new Set<string>(TERMINAL_EVENT_TYPES);

/**
 * Streams a run's events as SSE: replays everything after `after`, then follows live until the terminal event.
 * Live updates come from one pub/sub notification per write; each notification re-reads from the last sent seq,
 * so nothing is skipped or sent twice. A slow poll covers notifications lost to a reconnect.
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
  timers.push(setInterval(() => void pump(), 2000));
  timers.push(setInterval(() => !closed && res.write(': ping\n\n'), 15_000));
  await pump();
}
