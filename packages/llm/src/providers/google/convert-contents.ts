import type { Content, Part } from '@google/genai';
import { jsonTextProblem, tryParseJson, type Message } from '@agentloop/protocol';

/** Provider data produced by Gemini is sent back only to Gemini (and only then does a signature travel). */
export const GOOGLE = 'google';

/**
 * Gemini 3 requires a thoughtSignature on the first functionCall part of every step of the current turn. Steps
 * another provider produced (after a fallback) have none; Google documents this value for such injected calls.
 */
export const DUMMY_THOUGHT_SIGNATURE = 'skip_thought_signature_validator';

/** A JSON object from a text (arguments, a tool result); text too large or deep to walk travels as a string. */
const jsonObject = (raw: string, key: string): Record<string, unknown> => {
  if (jsonTextProblem(raw)) return { [key]: raw };
  const p = tryParseJson(raw);
  return p.ok && p.value && typeof p.value === 'object' && !Array.isArray(p.value)
    ? (p.value as Record<string, unknown>)
    : { [key]: raw };
};

const argsObject = (raw: string) => jsonObject(raw, 'value');

/**
 * Canonical transcript → Gemini `contents` + `systemInstruction`. Assistant tool calls become functionCall parts
 * carrying back their thoughtSignature exactly as received; consecutive tool results become one user content of
 * functionResponse parts (named after the call they answer).
 */
export function toGeminiContents(
  messages: readonly Message[],
  opts: { requireSignatures?: boolean } = {},
): { contents: Content[]; systemInstruction?: string } {
  const system = messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content ?? '')
    .filter(Boolean);
  const names = new Map<string, string>();
  const ids = new Map<string, string>();
  const contents: Content[] = [];
  for (const m of messages) {
    if (m.role === 'system') continue;
    if (m.role === 'user') contents.push({ role: 'user', parts: [{ text: m.content ?? '' }] });
    else if (m.role === 'assistant') {
      const parts: Part[] = [];
      if (m.content) parts.push({ text: m.content });
      for (const [i, c] of (m.toolCalls ?? []).entries()) {
        names.set(c.id, c.name);
        const pd = c.providerData as
          { provider?: string; thoughtSignature?: string; providerCallId?: string } | undefined;
        // Gemini's own id goes back to Gemini (ours replaced it when it was unsafe or reused)
        const id = pd?.provider === GOOGLE && pd.providerCallId !== undefined ? pd.providerCallId : c.id;
        ids.set(c.id, id);
        const part: Part = { functionCall: { id, name: c.name, args: argsObject(c.arguments) } };
        if (pd?.provider === GOOGLE && pd.thoughtSignature) part.thoughtSignature = pd.thoughtSignature;
        else if (i === 0 && opts.requireSignatures)
          // another provider's step, or a call Gemini itself failed to form (it came without a signature)
          part.thoughtSignature = DUMMY_THOUGHT_SIGNATURE;
        parts.push(part);
      }
      if (!parts.length) parts.push({ text: '' });
      contents.push({ role: 'model', parts });
    } else {
      const part: Part = {
        functionResponse: {
          id: ids.get(m.toolCallId ?? '') ?? m.toolCallId,
          name: names.get(m.toolCallId ?? '') ?? 'tool',
          response: jsonObject(m.content ?? '', 'output'),
        },
      };
      const last = contents[contents.length - 1];
      if (last?.role === 'user' && last.parts?.every((p) => p.functionResponse)) last.parts.push(part);
      else contents.push({ role: 'user', parts: [part] });
    }
  }
  return { contents, ...(system.length ? { systemInstruction: system.join('\n\n') } : {}) };
}
