import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '@agentloop/protocol';
import { AgentloopError } from './api-error.js';
import { FollowError, followRun, type FollowOptions } from './follow-run.js';

const event = (seq: number, type = seq === 5 ? 'run.completed' : 'iteration.started') => ({
  seq,
  runId: 'r1',
  type,
  at: '2025-01-01T00:00:00.000Z',
  data: {},
});
const frame = (seq: number) => `id: ${seq}\nevent: ${event(seq).type}\ndata: ${JSON.stringify(event(seq))}\n\n`;
const sse = (res: http.ServerResponse) => {
  res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': agentloop events\n\n');
  return res;
};

/** A real HTTP server; the n-th request (from 0) is answered by handlers[n] (the last one for every later request). */
async function server(handlers: Array<(req: http.IncomingMessage, res: http.ServerResponse) => void>) {
  const seen: Array<{ lastEventId: string | undefined; auth: string | undefined }> = [];
  const s = http.createServer((req, res) => {
    seen.push({ lastEventId: req.headers['last-event-id'] as string | undefined, auth: req.headers.authorization });
    handlers[Math.min(seen.length - 1, handlers.length - 1)]!(req, res);
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  servers.push(s);
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1/runs/r1/events`, seen };
}
const servers: http.Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

const fast: FollowOptions = { baseDelayMs: 10, maxDelayMs: 50 };
async function collect(url: string, opts: FollowOptions = {}) {
  const seqs: number[] = [];
  const reconnects: string[] = [];
  const all = { ...fast, ...opts, onReconnect: (r: { reason: string }) => reconnects.push(r.reason) };
  try {
    for await (const e of followRun(url, all)) seqs.push((e as EventEnvelope).seq);
    return { seqs, reconnects, error: null };
  } catch (error) {
    return { seqs, reconnects, error };
  }
}

describe('followRun: a run followed to its end across dropped streams', () => {
  it('reconnects with Last-Event-ID after a stream cut mid-frame, and never yields a replayed event twice', async () => {
    const { url, seen } = await server([
      (_req, res) => {
        sse(res);
        res.write(frame(1) + frame(2) + frame(3) + frame(4).slice(0, 20)); // the cut falls inside frame 4
        setTimeout(() => res.socket!.destroy(), 50);
      },
      (_req, res) => void sse(res).end(frame(2) + frame(3) + frame(4) + frame(5)), // a server replaying too much
    ]);
    const r = await collect(url, { headers: { authorization: 'Bearer k' } });
    expect(r.error).toBeNull();
    expect(r.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(seen).toEqual([
      { lastEventId: undefined, auth: 'Bearer k' },
      { lastEventId: '3', auth: 'Bearer k' },
    ]);
    expect(r.reconnects).toHaveLength(1);
  });

  it('rides out an api that is down (refused connections, 503) and a stream closed early, then serves the rest', async () => {
    const { url, seen } = await server([
      (_req, res) => void sse(res).end(frame(1) + frame(2)), // closed cleanly, no terminal event
      (req) => req.socket.destroy(), // connection torn down before any answer
      (_req, res) =>
        void res
          .writeHead(503, { 'content-type': 'application/json' })
          .end('{"error":{"code":"unavailable","message":"restarting"}}'),
      (_req, res) => void sse(res).end(frame(3) + frame(4) + frame(5)),
    ]);
    const r = await collect(url);
    expect(r.error).toBeNull();
    expect(r.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(seen.map((s) => s.lastEventId)).toEqual([undefined, '2', '2', '2']);
    expect(r.reconnects).toEqual([
      expect.stringContaining('ended before the run did'),
      expect.any(String),
      'HTTP 503 unavailable',
    ]);
  });

  it('drops a connection that goes silent and reconnects', async () => {
    const { url } = await server([
      (_req, res) => void sse(res).write(frame(1)), // then nothing, and the connection stays open
      (_req, res) => void sse(res).end(frame(2) + frame(3) + frame(4) + frame(5)),
    ]);
    const r = await collect(url, { idleTimeoutMs: 300 });
    expect(r.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(r.reconnects).toEqual(['nothing received for 300 ms']);
  });

  it('drops a connection whose request is never answered, and reconnects', async () => {
    const { url } = await server([
      () => {}, // the request is read, and never answered
      (_req, res) => void sse(res).end(frame(1) + frame(2) + frame(3) + frame(4) + frame(5)),
    ]);
    const r = await collect(url, { idleTimeoutMs: 300 });
    expect(r.seqs).toEqual([1, 2, 3, 4, 5]);
    expect(r.reconnects).toEqual(['no answer within 300 ms']);
  });

  it('gives up with FollowError when the stream cannot be got back within the attempts', async () => {
    const { url, seen } = await server([
      (_req, res) => void sse(res).end(frame(1)),
      (_req, res) => void res.writeHead(502).end(),
    ]);
    const r = await collect(url, { maxAttempts: 3 });
    expect(r.seqs).toEqual([1]);
    expect(r.error).toBeInstanceOf(FollowError);
    expect((r.error as FollowError).lastSeq).toBe(1);
    expect(seen).toHaveLength(4); // the first connection and 3 reconnects
  });

  it('gives up with FollowError when an outage outlasts maxReconnectMs', async () => {
    const { url } = await server([(req) => req.socket.destroy()]);
    const t0 = Date.now();
    const r = await collect(url, { maxAttempts: 1000, maxReconnectMs: 400 });
    expect(r.error).toBeInstanceOf(FollowError);
    expect(String(r.error)).toMatch(/could not get it back/);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('does not retry a final answer (401), and ends without error on 204', async () => {
    const unauthorized = await server([
      (_req, res) =>
        void res
          .writeHead(401, { 'content-type': 'application/json' })
          .end('{"error":{"code":"unauthorized","message":"unknown API key"}}'),
    ]);
    const r = await collect(unauthorized.url);
    expect(r.error).toBeInstanceOf(AgentloopError);
    expect(r.error).toMatchObject({ status: 401, code: 'unauthorized' });
    expect(unauthorized.seen).toHaveLength(1);
    const over = await server([(_req, res) => void res.writeHead(204).end()]);
    expect(await collect(over.url, { after: 5 })).toEqual({ seqs: [], reconnects: [], error: null });
    expect(over.seen[0]!.lastEventId).toBe('5');
  });

  it('reads a body through getReader(), as Safari must (its streams are not async iterable)', async () => {
    const { url } = await server([
      (_req, res) => void sse(res).end(frame(1) + frame(2) + frame(3) + frame(4) + frame(5)),
    ]);
    const safariFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      Object.defineProperty(res.body!, Symbol.asyncIterator, { value: undefined });
      return res;
    };
    expect(await collect(url, { fetch: safariFetch })).toEqual({ seqs: [1, 2, 3, 4, 5], reconnects: [], error: null });
  });

  it('throws invalid_response for a frame that is not an event envelope, instead of reconnecting to the same frame', async () => {
    const { url, seen } = await server([
      (_req, res) => void sse(res).end(frame(1) + 'id: 2\nevent: x\ndata: {"seq":"two"}\n\n'),
    ]);
    const r = await collect(url);
    expect(r.seqs).toEqual([1]);
    expect(r.error).toBeInstanceOf(AgentloopError);
    expect(r.error).toMatchObject({ code: 'invalid_response' });
    expect(seen).toHaveLength(1);
  });
});
