import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { nodeFetch } from './node-fetch.js';
import { ProviderRegistry } from './registry.js';
import type { ProviderSettings } from './provider-settings.js';
import type { OpenAIChatModel } from './openai/openai-chat-model.js';

describe('nodeFetch: the SDKs’ transport over node:http (real HTTP server)', () => {
  let server: http.Server;
  let base = '';
  let release: () => void = () => {};
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        if (req.url === '/echo')
          return void res.writeHead(200, { 'content-type': 'application/json', 'x-multi': ['a', 'b'] }).end(
            JSON.stringify({
              method: req.method,
              body,
              type: req.headers['content-type'],
              length: req.headers['content-length'],
            }),
          );
        if (req.url?.startsWith('/who'))
          return void res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              host: req.headers.host,
              authorization: req.headers.authorization ?? null,
              path: req.url,
            }),
          );
        if (req.url === '/limited')
          return void res
            .writeHead(429, { 'retry-after-ms': '1234', 'content-type': 'application/json' })
            .end('{"error":{"message":"slow down"}}');
        if (req.url === '/empty') return void res.writeHead(204).end();
        if (req.url === '/stream') {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: first\n\n');
          release = () => res.end('data: last\n\n');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('sends method, headers and body; reads status, headers (repeated ones too) and JSON', async () => {
    const r = await nodeFetch(`${base}/echo`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: '{"a":1}',
    });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-multi')).toBe('a, b');
    expect(await r.json()).toEqual({ method: 'POST', body: '{"a":1}', type: 'application/json', length: '7' });
  });

  it('sends Host, the path with its query, and credentials in the URL as Basic authorization unless one is given', async () => {
    const host = new URL(base).host;
    expect(await (await nodeFetch(`${base}/who?a=1&b=2`, { method: 'POST', body: '' })).json()).toEqual({
      host,
      authorization: null,
      path: '/who?a=1&b=2',
    });
    const withUser = base.replace('http://', 'http://us%40er:p%3Ass@');
    expect(await (await nodeFetch(`${withUser}/who`, { method: 'POST', body: '' })).json()).toEqual({
      host,
      authorization: `Basic ${Buffer.from('us@er:p:ss').toString('base64')}`,
      path: '/who',
    });
    expect(
      await (
        await nodeFetch(`${withUser}/who`, { method: 'POST', body: '', headers: { Authorization: 'Bearer k' } })
      ).json(),
    ).toMatchObject({ authorization: 'Bearer k' });
  });

  it('streams: the first event is readable before the response ends', async () => {
    const r = await nodeFetch(`${base}/stream`, { method: 'POST', body: '{}' });
    const reader = r.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: first\n\n');
    release();
    let rest = '';
    for (let x = await reader.read(); !x.done; x = await reader.read()) rest += new TextDecoder().decode(x.value);
    expect(rest).toBe('data: last\n\n');
  });

  it('an abort mid-stream ends the body with an AbortError', async () => {
    const ac = new AbortController();
    const r = await nodeFetch(`${base}/stream`, { method: 'POST', body: '{}', signal: ac.signal });
    const reader = r.body!.getReader();
    await reader.read();
    ac.abort();
    const err = await reader.read().then(
      () => null,
      (e) => e,
    );
    expect(err?.name).toBe('AbortError');
    release();
  });

  it('an aborted signal rejects at once; a refused connection is a TypeError like fetch’s', async () => {
    const ac = new AbortController();
    ac.abort();
    await expect(nodeFetch(`${base}/echo`, { signal: ac.signal })).rejects.toMatchObject({ name: 'AbortError' });
    await expect(nodeFetch('http://127.0.0.1:1/x', { method: 'POST', body: '' })).rejects.toBeInstanceOf(TypeError);
  });

  it('a 204 has no body', async () => {
    const r = await nodeFetch(`${base}/empty`);
    expect(r.status).toBe(204);
    expect(r.body).toBeNull();
  });

  it('the OpenAI SDK on it sees HTTP errors with their headers (retry-after-ms) and connection errors as such', async () => {
    const client = new OpenAI({ apiKey: 'k', baseURL: base, maxRetries: 0, fetch: nodeFetch });
    const limited = (await client.post('/limited', { body: {} }).catch((e) => e)) as InstanceType<
      typeof OpenAI.RateLimitError
    >;
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect(limited.headers.get('retry-after-ms')).toBe('1234');
    const down = new OpenAI({ apiKey: 'k', baseURL: 'http://127.0.0.1:1', maxRetries: 0, fetch: nodeFetch });
    expect(await down.post('/x', { body: {} }).catch((e) => e)).toBeInstanceOf(OpenAI.APIConnectionError);
  });
});

describe('transport choice', () => {
  const spec = { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} };
  const transport = (settings: ProviderSettings) =>
    (new ProviderRegistry({ openai: { apiKey: 'k' }, ...settings }).clientFor(spec) as OpenAIChatModel).transport;
  it('node:http by default; global fetch when asked, or when a proxy is configured', () => {
    expect(transport({})).toBe('node');
    expect(transport({ httpClient: 'fetch' })).toBe('fetch');
    expect(transport({ proxy: true })).toBe('fetch');
  });
});

describe('a kept-alive connection closed as it is reused', () => {
  it('is retried once on a fresh connection (the request never reached the server)', async () => {
    const served = new WeakSet<object>();
    let arrivals = 0;
    const server = http.createServer((req, res) => {
      arrivals++;
      if (served.has(req.socket)) return void req.socket.destroy(); // the server's idle close, racing the reuse
      served.add(req.socket);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/plain' }).end('ok'));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/x`;
    try {
      expect(await (await nodeFetch(url, { method: 'POST', body: 'a' })).text()).toBe('ok');
      expect(await (await nodeFetch(url, { method: 'POST', body: 'b' })).text()).toBe('ok');
      expect(arrivals).toBe(3); // ok, reset on the reused socket, ok on a fresh one
    } finally {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    }
  });
});
