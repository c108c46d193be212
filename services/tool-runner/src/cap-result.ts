/** Characters per token of the estimate used until exact counting lands (context-pressure issue). */
export const CHARS_PER_TOKEN = 4;

/**
 * Caps a tool result at `maxTokens`: head, a marker saying how much was cut, tail. The full result stays in the
 * call's record on the run.
 */
export function capText(text: string, maxTokens: number): string {
  const maxChars = maxTokens * CHARS_PER_TOKEN;
  if (text.length <= maxChars) return text;
  const keep = Math.max(0, maxChars - 120);
  const head = text.slice(0, Math.ceil(keep * 0.7));
  const tail = text.slice(text.length - Math.floor(keep * 0.3));
  const cut = text.length - head.length - tail.length;
  return `${head}\n[… ${cut} characters (about ${Math.ceil(cut / CHARS_PER_TOKEN)} tokens) cut from this tool result …]\n${tail}`;
}
