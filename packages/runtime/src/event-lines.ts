import { wellFormedJson, type NewEvent } from '@agentloop/protocol';

/**
 * Events as the run scripts take them: each envelope built whole here but for its seq —
 * `,"runId":…,"type":…,"at":…,"data":…}` — one per line (JSON text never holds a raw newline). A script only
 * sequences them: it prepends `{"seq":n`, in the same step as the state change they report.
 */
export function eventLines(runId: string, at: string, events: readonly NewEvent[]): string {
  const head = `,"runId":${JSON.stringify(runId)},"type":`;
  return events.map((e) => `${head}${JSON.stringify(e.type)},"at":"${at}","data":${wellFormedJson(e.data)}}`).join('\n');
}
