import type { Message, RunSnapshot } from '@agentloop/protocol';

/** Columns padded to their widest cell, two spaces apart (the last one not padded). */
export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

export const shorten = (text: string, max: number) => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();

/** A run's usage in one line. */
export function usageLine(u: RunSnapshot['usage']): string {
  return `${u.promptTokens} prompt + ${u.completionTokens} completion tokens (${u.reasoningTokens} reasoning), ${u.llmCalls} model calls, ${u.toolCalls} tool calls, $${u.costUsd.toFixed(6)}`;
}

/** `kubectl describe`-like text of a snapshot: its fields, pending calls, output and (when read) its messages. */
export function describeRun(run: RunSnapshot & { threadId?: string | null }): string {
  const fields: Array<[string, string | null | undefined]> = [
    ['id', run.id],
    ['status', `${run.status}${run.stopReason ? ` (${run.stopReason})` : ''}`],
    ['iteration', String(run.iteration)],
    ['model', `${run.model.provider}/${run.model.name}`],
    ['mode', run.mode],
    ['thread', run.threadId],
    ['created', run.createdAt],
    ['updated', run.updatedAt],
    ['usage', usageLine(run.usage)],
    ['error', run.error ? `${run.error.code}: ${run.error.message}` : null],
    ['metadata', Object.keys(run.metadata).length ? JSON.stringify(run.metadata) : null],
  ];
  const out = fields.filter(([, v]) => v).map(([k, v]) => `${`${k}:`.padEnd(11)}${v}`);
  if (run.pending.length)
    out.push(
      'pending:',
      ...run.pending.map((p) => `  ${p.callId}  ${p.name}  ${p.pauseType}  ${JSON.stringify(p.arguments)}`),
    );
  if (run.output !== null) out.push('output:', indent(run.output));
  if (run.outputJson !== undefined && run.outputJson !== null)
    out.push('outputJson:', indent(JSON.stringify(run.outputJson, null, 2)));
  if (run.messages)
    out.push(`messages (${run.messages.length}, as the model sees them next):`, ...run.messages.map(messageLine));
  if (run.history)
    out.push(`history (${run.history.length}, every message appended):`, ...run.history.map(messageLine));
  return out.join('\n');
}

/** One message in a line: its role, text, calls or the call it answers. */
export function messageLine(m: Message): string {
  const calls = (m.toolCalls ?? []).map((c) => `${c.name}(${shorten(c.arguments, 80)}) [${c.id}]`);
  const head = m.role === 'tool' ? `tool ${m.toolCallId}` : m.role;
  const text = [m.content ? shorten(oneLine(m.content), 160) : '', ...calls.map((c) => `→ ${c}`)]
    .filter(Boolean)
    .join(' ');
  return `  [${head}] ${text}`;
}

const indent = (text: string) =>
  text
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
