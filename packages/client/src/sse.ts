export interface SseFrame {
  id: string | null;
  event: string | null;
  data: string;
}

/** The frames of an SSE body, as they arrive (comments and empty frames skipped). */
export async function* sseFrames(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let idx: number;
    while ((idx = buf.indexOf('\n\n')) >= 0) {
      const lines = buf.slice(0, idx).split('\n');
      buf = buf.slice(idx + 2);
      const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? null;
      const data = lines.filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) yield { id: field('id'), event: field('event'), data };
    }
  }
}
