import { z } from 'zod';

export const ToolCallSchema = z.object({
  id: z.string().min(1).max(200),
  name: z.string().min(1).max(200),
  /** The raw JSON text the model produced (may be invalid JSON: the tool-runner answers that with invalid_arguments). */
  arguments: z.string(),
  /** Opaque per-provider data that must round-trip on this call (e.g. Gemini thoughtSignature). */
  providerData: z.record(z.string(), z.unknown()).optional(),
});
export type ToolCall = z.infer<typeof ToolCallSchema>;

export const RoleSchema = z.enum(['system', 'user', 'assistant', 'tool']);
export type Role = z.infer<typeof RoleSchema>;

export const MessageSchema = z.object({
  role: RoleSchema,
  content: z.string().nullable().default(null),
  toolCalls: z.array(ToolCallSchema).optional(),
  toolCallId: z.string().min(1).optional(),
  reasoning: z.string().optional(),
  providerData: z.record(z.string(), z.unknown()).optional(),
});
export type Message = z.infer<typeof MessageSchema>;

/**
 * The transcript invariant of SPEC §2: every assistant toolCalls[i].id is answered by exactly one tool
 * message before the next user or assistant message, no tool message answers an id that was not called,
 * ids are unique, results come in call order. Returns the problems found (empty = valid).
 */
export function transcriptProblems(messages: readonly Message[], opts: { allowOpenTail?: boolean } = {}): string[] {
  const check = new TranscriptCheck();
  check.push(messages);
  return check.problems(opts);
}

/**
 * `transcriptProblems`, fed a message at a time: a transcript that only grows is checked once per message, however
 * long it gets (the loop checks the view it sends before every model call).
 */
export class TranscriptCheck {
  private readonly found: string[] = [];
  private readonly seen = new Set<string>();
  private open: { index: number; ids: string[]; answered: string[] } | null = null;
  /** Messages checked so far. */
  length = 0;

  push(messages: readonly Message[]): this {
    for (const m of messages) this.one(m, this.length++);
    return this;
  }

  /** The problems so far, the still-open calls of the last assistant message counted as unanswered unless `allowOpenTail`. */
  problems(opts: { allowOpenTail?: boolean } = {}): string[] {
    return this.open && !opts.allowOpenTail
      ? [...this.found, ...closing(this.open, 'the end of the transcript')]
      : [...this.found];
  }

  private one(m: Message, i: number): void {
    if (m.role !== 'assistant' && m.toolCalls?.length) this.found.push(`message #${i} (${m.role}) carries toolCalls`);
    if (m.role === 'tool') {
      const id = m.toolCallId;
      const open = this.open;
      if (!id) this.found.push(`tool message #${i} has no toolCallId`);
      else if (!open) this.found.push(`tool message #${i} answers '${id}' but no call is open`);
      else if (!open.ids.includes(id)) this.found.push(`tool message #${i} answers '${id}', which was not called`);
      else if (open.answered.includes(id)) this.found.push(`tool message #${i} answers '${id}' a second time`);
      else open.answered.push(id);
      return;
    }
    if ((m.role === 'user' || m.role === 'assistant') && this.open) {
      this.found.push(...closing(this.open, `message #${i} (${m.role})`));
      this.open = null;
    }
    if (m.role === 'assistant' && m.toolCalls?.length) {
      for (const c of m.toolCalls) {
        if (this.seen.has(c.id)) this.found.push(`call id '${c.id}' is not unique`);
        this.seen.add(c.id);
      }
      this.open = { index: i, ids: m.toolCalls.map((c) => c.id), answered: [] };
    }
  }
}

/** What is wrong with an assistant message's calls when the turn ends `where`. */
function closing(open: { index: number; ids: string[]; answered: string[] }, where: string): string[] {
  const out: string[] = [];
  const missing = open.ids.filter((id) => !open.answered.includes(id));
  if (missing.length)
    out.push(`assistant message #${open.index}: call(s) ${missing.join(', ')} not answered before ${where}`);
  const inOrder = open.ids.filter((id) => open.answered.includes(id));
  if (inOrder.join('\0') !== open.answered.join('\0'))
    out.push(`results after assistant message #${open.index} are not in call order`);
  return out;
}
