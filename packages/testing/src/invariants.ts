import { EVENT_TYPES, TERMINAL_EVENT_TYPES, transcriptProblems, type EventEnvelope, type Message } from '@agentloop/protocol';

/** Problems with a finished run's transcript (the SPEC invariant). Empty = valid. */
export function checkTranscript(messages: readonly Message[], opts: { allowOpenTail?: boolean } = {}): string[] {
  return transcriptProblems(messages, opts);
}

/** seq 1..n gap-free, one runId, exactly one terminal event and it is last; every tool call proposed first and ended once. */
export function checkEvents(events: readonly EventEnvelope[], opts: { expectTerminal?: boolean } = {}): string[] {
  const problems: string[] = [];
  if (!events.length) return ['no events'];
  const runId = events[0]!.runId;
  events.forEach((e, i) => {
    if (e.seq !== i + 1) problems.push(`event #${i + 1} has seq ${e.seq}`);
    if (e.runId !== runId) problems.push(`event ${e.seq} has runId ${e.runId}`);
    if (!(EVENT_TYPES as string[]).includes(e.type)) problems.push(`event ${e.seq} has unknown type ${e.type}`);
  });
  const terminals = events.filter((e) => (TERMINAL_EVENT_TYPES as string[]).includes(e.type));
  if (opts.expectTerminal !== false) {
    if (terminals.length !== 1) problems.push(`${terminals.length} terminal events`);
    else if (terminals[0] !== events[events.length - 1]) problems.push('the terminal event is not last');
  }
  const byCall = new Map<string, string[]>();
  for (const e of events) if (e.type === 'tool.call') byCall.set(String(e.data.callId), [...(byCall.get(String(e.data.callId)) ?? []), String(e.data.status)]);
  const finals = ['completed', 'error', 'denied', 'skipped', 'cancelled'];
  for (const [id, statuses] of byCall) {
    if (statuses[0] !== 'proposed') problems.push(`call ${id}: first status ${statuses[0]}`);
    const ends = statuses.filter((s) => finals.includes(s));
    if (opts.expectTerminal !== false && ends.length !== 1) problems.push(`call ${id}: ${ends.length} final statuses (${statuses.join(',')})`);
    if (ends.length === 1 && !finals.includes(statuses[statuses.length - 1]!)) problems.push(`call ${id}: final status is not last`);
  }
  return problems;
}
