/** Characters per token of the first guess (refined with the token counter when one is given). */
export const CHARS_PER_TOKEN = 4;

const marker = (cut: number, tokens: number) =>
  `\n[… ${cut} characters (about ${tokens} tokens) cut from this tool result …]\n`;

function cut(text: string, keep: number, count: (t: string) => number): string {
  const head = text.slice(0, Math.ceil(keep * 0.7));
  const tail = text.slice(text.length - Math.floor(keep * 0.3));
  const removed = text.slice(head.length, text.length - tail.length);
  return `${head}${marker(removed.length, count(removed))}${tail}`;
}

/**
 * Caps a tool result at `maxTokens`: head, a marker saying how much was cut, tail. With a counter the cap is
 * measured in that tokenizer's tokens (text like CJK or base64 has far fewer characters per token than prose);
 * without one, at 4 characters a token. The full result stays in the call's record on the run.
 */
export function capText(
  text: string,
  maxTokens: number,
  count: (t: string) => number = (t) => Math.ceil(t.length / CHARS_PER_TOKEN),
): string {
  if (text.length <= maxTokens) return text; // a token is at least one character
  // Density (tokens per character) from three samples keeps the cost bounded for multi-megabyte results; the
  // densest sample sets the cut, with a margin, so the capped text stays under the cap.
  const sample = 2000;
  const density =
    text.length <= 3 * sample
      ? count(text) / text.length
      : Math.max(
          ...[0, Math.floor(text.length / 2) - sample / 2, text.length - sample].map(
            (at) => count(text.slice(at, at + sample)) / sample,
          ),
        );
  if (density * text.length <= maxTokens) return text;
  const keep = Math.max(0, Math.floor(((maxTokens - 40) / density) * 0.95));
  return cut(text, keep, (t) => Math.ceil(t.length * density));
}
