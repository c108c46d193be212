import type { Message } from '@agentloop/protocol';

/**
 * Pure transcript surgery for context compression. A transcript the model sees is `prefix + history[from..]`:
 * the prefix holds the system prompt, a summary or note, and the last user message; the kept suffix starts at a
 * turn boundary, so a tool call and its result are never separated and the kept turns keep their reasoning and
 * provider data untouched.
 */

/** Index of the last user message, or -1. */
export function lastUserIndex(messages: readonly Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return i;
  return -1;
}

/**
 * Indexes where a kept suffix may start: a user or assistant message at which no call is open (every tool message
 * after it answers a call made at or after it).
 */
export function turnBoundaries(messages: readonly Message[]): number[] {
  const out: number[] = [];
  let open = 0;
  messages.forEach((m, i) => {
    if ((m.role === 'user' || m.role === 'assistant') && open === 0) out.push(i);
    if (m.role === 'assistant') open = m.toolCalls?.length ?? 0;
    else if (m.role === 'tool') open = Math.max(0, open - 1);
    else if (m.role === 'user') open = 0;
  });
  return out;
}

/**
 * Where to cut: the earliest boundary whose suffix fits `keepBudget` tokens, never before `minFrom` and keeping at
 * least the last turn when anything can be kept. `tokens[i]` is message i's count. Returns messages.length when
 * nothing can be kept.
 */
export function chooseCut(
  messages: readonly Message[],
  tokens: readonly number[],
  keepBudget: number,
  minFrom = 0,
): number {
  const bounds = turnBoundaries(messages).filter((b) => b >= minFrom);
  let suffix = 0;
  let best = messages.length;
  let j = messages.length;
  for (let b = bounds.length - 1; b >= 0; b--) {
    const from = bounds[b]!;
    for (let i = from; i < j; i++) suffix += tokens[i]!;
    j = from;
    if (suffix > keepBudget) break;
    best = from;
  }
  return best;
}

export const SUMMARY_HEADER =
  'Summary of the earlier part of this conversation (older turns were compressed to fit the context window):';
export const PRUNE_NOTE =
  'Note: the earlier part of this conversation, including tool calls and their results, was removed to fit the context window. Continue from the last user message below.';

/** The prefix of a summarized transcript: system prompt(s), the summary, and the last user message (when it was cut). */
export function summaryPrefix(view: readonly Message[], cut: number, summary: string): Message[] {
  const systems = view.filter((m, i) => m.role === 'system' && i < cut);
  const lu = lastUserIndex(view);
  const prefix: Message[] = [...systems, { role: 'user', content: `${SUMMARY_HEADER}\n\n${summary.trim()}` }];
  if (lu >= 0 && lu < cut) prefix.push(view[lu]!);
  return prefix;
}

/** Level 2: system prompt(s), a note, and the last user message — nothing else. */
export function prunedView(view: readonly Message[]): Message[] {
  const lu = lastUserIndex(view);
  const out: Message[] = [...view.filter((m) => m.role === 'system'), { role: 'user', content: PRUNE_NOTE }];
  if (lu >= 0) out.push(view[lu]!);
  // The newest batch (the last assistant turn with calls, and its results) stays: a model that no longer sees its
  // own calls repeats them. When even this does not fit, the ladder's last step answers them `skipped`.
  let batch = -1;
  for (let i = view.length - 1; i > lu; i--)
    if (view[i]!.role === 'assistant' && view[i]!.toolCalls?.length) {
      batch = i;
      break;
    }
  if (batch > lu) out.push(...view.slice(batch));
  return out;
}

/** The older part of a transcript as text for the summarizing model (tool results capped). */
export function renderForSummary(messages: readonly Message[], maxCharsPerMessage = 4000): string {
  const clip = (s: string) => (s.length > maxCharsPerMessage ? `${s.slice(0, maxCharsPerMessage)} […]` : s);
  return messages
    .filter((m) => m.role !== 'system')
    .map((m) => {
      if (m.role === 'tool') return `[tool result ${m.toolCallId}]: ${clip(m.content ?? '')}`;
      const calls = (m.toolCalls ?? []).map((c) => `\n  → call ${c.name}(${clip(c.arguments)}) [${c.id}]`).join('');
      return `[${m.role}]: ${clip(m.content ?? '')}${calls}`;
    })
    .join('\n');
}

export const SUMMARIZE_SYSTEM =
  'You compress agent transcripts. Summarize the conversation below so an assistant can continue the task without it: ' +
  "the user's goal, decisions made, facts and numbers learned from tool results (keep exact values), what was tried and failed, " +
  'and what remains to do. Be concise; use bullet points; do not invent anything.';
