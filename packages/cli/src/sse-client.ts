import type { EventEnvelope } from '@agentloop/protocol';

/** Reads a run's SSE stream, calling onEvent for each envelope, until the server closes it after the terminal event. */
export async function followEvents(url: string, headers: Record<string, string>, onEvent: (e: EventEnvelope) => void | Promise<void>, signal?: AbortSignal): Promise<void> {
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal });
  if (!res.ok || !res.body) throw new Error(`GET ${url}: HTTP ${res.status} ${await res.text().catch(() => '')}`);
  const decoder = new TextDecoder();
  let buf = '';
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    buf += decoder.decode(chunk, { stream: true });
    let idx: number;
    while ((idx = buf.indexOf('\n\n')) >= 0) {
      const frame = buf.slice(0, idx);
      buf = buf.slice(idx + 2);
      const data = frame.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
      if (data) await onEvent(JSON.parse(data) as EventEnvelope);
    }
  }
}
