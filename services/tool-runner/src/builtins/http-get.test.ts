import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolFailure } from '../tool-definition.js';
import { guardedGet } from './http-get.js';

describe('http_get SSRF guard', () => {
  let server: http.Server;
  let port = 0;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/redirect-to-metadata')
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' }).end();
      else if (req.url === '/redirect-local') res.writeHead(301, { location: '/hello' }).end();
      else if (req.url === '/big') res.writeHead(200, { 'content-type': 'text/plain' }).end('z'.repeat(5000));
      else res.writeHead(200, { 'content-type': 'text/plain' }).end('hello');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  const signal = () => AbortSignal.timeout(5000);

  it('refuses loopback after resolving the name', async () => {
    const err = await guardedGet(`http://localhost:${port}/`, signal()).catch((e) => e);
    expect(err).toBeInstanceOf(ToolFailure);
    expect(err.code).toBe('blocked_url');
  });

  it('refuses other schemes and credentials', async () => {
    expect((await guardedGet('file:///etc/passwd', signal()).catch((e) => e)).code).toBe('blocked_url');
    expect((await guardedGet('http://user:pw@example.com/', signal()).catch((e) => e)).code).toBe('blocked_url');
  });

  const allowLoopback = { allowAddress: (a: string) => a === '127.0.0.1' };

  it('fetches, follows redirects and re-checks every hop', async () => {
    const ok = await guardedGet(`http://127.0.0.1:${port}/redirect-local`, signal(), allowLoopback);
    expect(ok).toMatchObject({ status: 200, body: 'hello', contentType: 'text/plain' });
    const err = await guardedGet(`http://127.0.0.1:${port}/redirect-to-metadata`, signal(), allowLoopback).catch(
      (e) => e,
    );
    expect(err.code).toBe('blocked_url');
  });

  it('caps the body size', async () => {
    const r = await guardedGet(`http://127.0.0.1:${port}/big`, signal(), { ...allowLoopback, maxBytes: 100 });
    expect(r.body).toHaveLength(100);
    expect(r.truncated).toBe(true);
  });
});
