import { EventEnvelopeSchema, wellFormedJson } from '@agentloop/protocol';
import { toSnapshot, type RunStore } from '@agentloop/runtime';

/**
 * The body of run `runId`'s delivery of event `seq` (SPEC §2): `{"type","timestamp","data":{"runId","event","run"}}`
 * — the event's envelope and time, and the run's snapshot as it is now (built for the first attempt and kept: every
 * attempt sends these bytes). Null when the run or the event is gone.
 */
export async function webhookBody(store: RunStore, runId: string, seq: number): Promise<string | null> {
  const st = await store.load(runId);
  if (!st) return null;
  const page = await store.eventsRaw(runId, seq - 1, 1);
  const parsed = page.events.length ? EventEnvelopeSchema.safeParse(JSON.parse(page.events[0]!)) : null;
  if (!parsed?.success || parsed.data.seq !== seq) return null;
  const event = parsed.data;
  return wellFormedJson({ type: event.type, timestamp: event.at, data: { runId, event, run: toSnapshot(st) } });
}
