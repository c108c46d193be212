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
  const problems: string[] = [];
  const seen = new Set<string>();
  let open: { index: number; ids: string[]; answered: string[] } | null = null;
  const close = (where: string) => {
    if (!open) return;
    const missing = open.ids.filter((id) => !open!.answered.includes(id));
    if (missing.length) problems.push(`assistant message #${open.index}: call(s) ${missing.join(', ')} not answered before ${where}`);
    const inOrder = open.ids.filter((id) => open!.answered.includes(id));
    if (inOrder.join('\0') !== open.answered.join('\0')) problems.push(`results after assistant message #${open.index} are not in call order`);
    open = null;
  };
  messages.forEach((m, i) => {
    if (m.role !== 'assistant' && m.toolCalls?.length) problems.push(`message #${i} (${m.role}) carries toolCalls`);
    if (m.role === 'tool') {
      const id = m.toolCallId;
      if (!id) problems.push(`tool message #${i} has no toolCallId`);
      else if (!open) problems.push(`tool message #${i} answers '${id}' but no call is open`);
      else if (!open.ids.includes(id)) problems.push(`tool message #${i} answers '${id}', which was not called`);
      else if (open.answered.includes(id)) problems.push(`tool message #${i} answers '${id}' a second time`);
      else open.answered.push(id);
      return;
    }
    if (m.role === 'user' || m.role === 'assistant') close(`message #${i} (${m.role})`);
    if (m.role === 'assistant' && m.toolCalls?.length) {
      for (const c of m.toolCalls) {
        if (seen.has(c.id)) problems.push(`call id '${c.id}' is not unique`);
        seen.add(c.id);
      }
      open = { index: i, ids: m.toolCalls.map((c) => c.id), answered: [] };
    }
  });
  if (open && !opts.allowOpenTail) close('the end of the transcript');
  return problems;
}
