import {
  EVENT_TYPES,
  TERMINAL_EVENT_TYPES,
  transcriptProblems,
  type EventEnvelope,
  type Message,
} from '@agentloop/protocol';

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
  for (const e of events)
    if (e.type === 'tool.call')
      byCall.set(String(e.data.callId), [...(byCall.get(String(e.data.callId)) ?? []), String(e.data.status)]);
  const finals = ['completed', 'error', 'denied', 'skipped', 'cancelled'];
  for (const [id, statuses] of byCall) {
    if (statuses[0] !== 'proposed') problems.push(`call ${id}: first status ${statuses[0]}`);
    const ends = statuses.filter((s) => finals.includes(s));
    if (opts.expectTerminal !== false && ends.length !== 1)
      problems.push(`call ${id}: ${ends.length} final statuses (${statuses.join(',')})`);
    if (ends.length === 1 && !finals.includes(statuses[statuses.length - 1]!))
      problems.push(`call ${id}: final status is not last`);
  }
  return problems;
}

/**
 * What a model adapter's response must be, however hostile the stream it read: counts non-negative safe integers,
 * the model name and every call's id and name non-empty strings, its arguments text (JSON text, with `argumentsJson`).
 * Empty = sane.
 */
export function checkResponse(
  res: { message: Message; model: unknown; usage: object },
  opts: { argumentsJson?: boolean } = {},
): string[] {
  const problems: string[] = [];
  if (res.message.role !== 'assistant') problems.push(`role ${res.message.role}`);
  if (res.message.content !== null && typeof res.message.content !== 'string')
    problems.push('content is neither text nor null');
  if (typeof res.model !== 'string' || !res.model) problems.push(`model ${JSON.stringify(res.model)}`);
  for (const [k, v] of Object.entries(res.usage))
    if (!(Number.isSafeInteger(v) && (v as number) >= 0)) problems.push(`usage.${k} = ${JSON.stringify(v)}`);
  for (const c of res.message.toolCalls ?? []) {
    if (typeof c.id !== 'string') problems.push(`call id ${JSON.stringify(c.id)}`);
    if (typeof c.name !== 'string' || !c.name) problems.push(`call name ${JSON.stringify(c.name)}`);
    if (typeof c.arguments !== 'string') problems.push(`call ${c.name} arguments are not text`);
    else if (opts.argumentsJson) {
      try {
        JSON.parse(c.arguments);
      } catch {
        problems.push(`call ${c.name} arguments are not JSON text`);
      }
    }
  }
  return problems;
}
