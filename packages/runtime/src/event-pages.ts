import type { EventEnvelope } from '@agentloop/protocol';
import type { RunScripts } from './run-scripts.js';

/** A page of a run's events as stored (JSON): those after the page's start through `through`; `last`: the run's last seq. */
export interface EventPage {
  events: string[];
  through: number;
  last: number;
}

/** readEvents-10.lua: the events after `after`, up to `pageSize` seqs (a gap in the log is stepped over). */
export async function eventPage(
  scripts: RunScripts,
  runId: string,
  after: number,
  pageSize: number,
): Promise<EventPage> {
  const [through, last, ...events] = (await scripts.run('readEvents', runId, () => [after, pageSize])).values;
  return { events: events.map(String), through: Number(through), last: Number(last) };
}

/** Every event after `after`, in seq order, read a page at a time. */
export async function allEvents(page: (after: number) => Promise<EventPage>, after: number): Promise<EventEnvelope[]> {
  const out: EventEnvelope[] = [];
  for (let from = after, p: EventPage; ; from = p.through) {
    p = await page(from);
    for (const e of p.events) out.push(JSON.parse(e) as EventEnvelope);
    if (p.through <= from || p.through >= p.last) return out;
  }
}
