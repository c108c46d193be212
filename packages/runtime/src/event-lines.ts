import { wellFormedJson, type NewEvent } from '@agentloop/protocol';

/**
 * An event's envelope but for its seq, from its members as JSON text: `,"runId":…,"type":…,"at":…,"data":…}`. A run
 * script prepends `{"seq":n`; the events a script builds itself get the same envelope, compiled in (event-templates.ts).
 */
export function envelopeTail(runId: string, type: string, at: string, data: string): string {
  return `,"runId":${runId},"type":${type},"at":${at},"data":${data}}`;
}

/**
 * Events as the run scripts take them: each envelope built whole here but for its seq, one per line (JSON text never
 * holds a raw newline). A script only sequences them, in the same step as the state change they report.
 */
export function eventLines(runId: string, at: string, events: readonly NewEvent[]): string {
  const id = JSON.stringify(runId);
  const when = JSON.stringify(at);
  return events.map((e) => envelopeTail(id, JSON.stringify(e.type), when, wellFormedJson(e.data))).join('\n');
}
