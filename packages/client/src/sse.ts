export interface SseFrame {
  id: string | null;
  event: string | null;
  data: string;
}

/**
 * The frames of an SSE body, as they arrive (the WHATWG event-stream format: LF, CRLF or CR line ends, `field:value`
 * with one optional space, comments skipped). Frames without data are not yielded, as an EventSource dispatches none.
 */
export async function* sseFrames(body: AsyncIterable<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buf = '';
  let frame: SseFrame = { id: null, event: null, data: '' };
  let dataLines: string[] = [];
  for await (const chunk of body) {
    buf += decoder.decode(chunk, { stream: true });
    let end: RegExpExecArray | null;
    // a CR at the end of the buffer may be the first half of a CRLF: wait for the next chunk
    while ((end = /\r\n|\r(?!$)|\n/.exec(buf))) {
      const line = buf.slice(0, end.index);
      buf = buf.slice(end.index + end[0].length);
      if (line === '') {
        if (dataLines.length) yield { ...frame, data: dataLines.join('\n') };
        frame = { id: null, event: null, data: '' };
        dataLines = [];
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + (line[colon + 1] === ' ' ? 2 : 1));
      if (field === 'data') dataLines.push(value);
      else if (field === 'id') frame.id = value;
      else if (field === 'event') frame.event = value;
    }
  }
}
