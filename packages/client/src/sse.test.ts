import { describe, expect, it } from 'vitest';
import { sseFrames } from './sse.js';

async function framesOf(chunks: string[]) {
  async function* body() {
    for (const c of chunks) yield new TextEncoder().encode(c);
  }
  const out = [];
  for await (const f of sseFrames(body())) out.push(f);
  return out;
}

describe('sseFrames: the event-stream format as any server or proxy may write it', () => {
  it('reads LF, CRLF and CR line ends, a CRLF split across chunks, and fields without the space', async () => {
    const frames = await framesOf([
      ': comment\r\n\r\nid: 1\r\nevent: a\r\ndata: {"x":1}\r',
      '\n\r\nid:2\revent:b\rdata:two\rdata: lines\r\r',
      'id: 3\ndata: end\n\n',
    ]);
    expect(frames).toEqual([
      { id: '1', event: 'a', data: '{"x":1}' },
      { id: '2', event: 'b', data: 'two\nlines' },
      { id: '3', event: null, data: 'end' },
    ]);
  });

  it('reads a frame cut anywhere, a multi-byte character cut in two included, and yields no frame without data', async () => {
    const whole = 'id: 7\nevent: message.delta\ndata: {"text":"zoë 🙂"}\n\nid: 8\n\n';
    const bytes = new TextEncoder().encode(whole);
    async function* byteByByte() {
      for (const b of bytes) yield new Uint8Array([b]);
    }
    const out = [];
    for await (const f of sseFrames(byteByByte())) out.push(f);
    expect(out).toEqual([{ id: '7', event: 'message.delta', data: '{"text":"zoë 🙂"}' }]);
  });
});
