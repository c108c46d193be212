import type { EventEnvelope } from '@agentloop/client';

/** One model turn as it streams: its reasoning and its text. */
export interface Turn {
  iteration: number;
  reasoning: string;
  text: string;
}

/** A tool call's latest state (the `tool.call` events of one call id, merged). */
export interface CallView {
  callId: string;
  name: string;
  iteration: number;
  status: string;
  arguments: unknown;
  originalArguments?: unknown;
  result?: unknown;
  error?: { code: string; message: string };
  durationMs?: number;
}

/** What the run view shows, folded from the run's events one at a time. */
export interface RunEvents {
  lastSeq: number;
  iteration: number;
  turns: Turn[];
  calls: CallView[];
  events: EventEnvelope[];
}

export const emptyRunEvents = (): RunEvents => ({ lastSeq: 0, iteration: 0, turns: [], calls: [], events: [] });

function withTurn(turns: Turn[], iteration: number, field: 'text' | 'reasoning', delta: string): Turn[] {
  const last = turns[turns.length - 1];
  if (last && last.iteration === iteration) return [...turns.slice(0, -1), { ...last, [field]: last[field] + delta }];
  return [...turns, { iteration, reasoning: '', text: '', [field]: delta }];
}

/** The state after one more event (events at or before `lastSeq` are ignored: a replay after a reconnect). */
export function applyEvent(s: RunEvents, e: EventEnvelope): RunEvents {
  if (e.seq <= s.lastSeq) return s;
  const next: RunEvents = { ...s, lastSeq: e.seq, events: [...s.events, e] };
  const d = e.data as Record<string, unknown>;
  const iteration = typeof d.iteration === 'number' ? d.iteration : s.iteration;
  switch (e.type) {
    case 'iteration.started':
      next.iteration = iteration;
      break;
    case 'message.delta':
    case 'reasoning.delta':
      next.turns = withTurn(
        s.turns,
        iteration,
        e.type === 'message.delta' ? 'text' : 'reasoning',
        String(d.text ?? ''),
      );
      break;
    case 'tool.call': {
      const callId = String(d.callId);
      const i = s.calls.findIndex((c) => c.callId === callId);
      const prev =
        i >= 0
          ? s.calls[i]!
          : { callId, name: String(d.name), iteration: s.iteration, status: 'proposed', arguments: d.arguments };
      const merged: CallView = { ...prev, status: String(d.status), arguments: d.arguments ?? prev.arguments };
      if (d.originalArguments !== undefined) merged.originalArguments = d.originalArguments;
      if (d.result !== undefined) merged.result = d.result;
      if (d.error !== undefined) merged.error = d.error as CallView['error'];
      if (typeof d.durationMs === 'number') merged.durationMs = d.durationMs;
      next.calls = i >= 0 ? s.calls.map((c, j) => (j === i ? merged : c)) : [...s.calls, merged];
      break;
    }
  }
  return next;
}

/** A one-line summary of an event for the history table. */
export function eventSummary(e: EventEnvelope): string {
  const d = e.data as Record<string, unknown>;
  switch (e.type) {
    case 'message.delta':
    case 'reasoning.delta':
      return JSON.stringify(d.text);
    case 'tool.call':
      return `${String(d.name)} ${String(d.status)} (${String(d.callId)})`;
    case 'run.paused':
      return `${(d.pending as unknown[] | undefined)?.length ?? 0} pending, expires ${String(d.expiresAt)}`;
    case 'run.failed':
      return JSON.stringify(d.error);
    default: {
      const text = JSON.stringify(d);
      return text === '{}' ? '' : text.length > 200 ? `${text.slice(0, 200)}…` : text;
    }
  }
}

/** Events that change the snapshot's status or pending calls: the view reloads the snapshot after them. */
export const SNAPSHOT_EVENTS = new Set([
  'run.started',
  'run.paused',
  'run.resumed',
  'run.completed',
  'run.failed',
  'run.cancelled',
]);
