import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { sendWebhook } from './webhook-sender.js';

const secretB64 = Buffer.from('a webhook secret of 32 bytes....').toString('base64');
const secret = Buffer.from(secretB64, 'base64');

describe('one signed attempt (Standard Webhooks)', () => {
  let server: http.Server;
  let port = 0;
  const got: Array<{ url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        got.push({ url: req.url!, headers: req.headers, body });
        if (req.url === '/hang') return; // never answers
        if (req.url === '/redirect') return void res.writeHead(307, { location: '/ok' }).end();
        res.writeHead(req.url === '/ok' ? 200 : 500).end('x'.repeat(100_000));
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  // `.invalid` names never resolve: only the pinned address can be reached
  const send = (path: string, timeoutMs = 5000) =>
    sendWebhook({
      url: new URL(`http://hooks.invalid:${port}${path}`),
      target: { address: '127.0.0.1', family: 4 },
      id: 'msg_run_1_4',
      body: '{"type":"run.completed"}',
      secret,
      timeoutMs,
    });

  it('signs id, timestamp and body so that the standardwebhooks library verifies it, and reports the status', async () => {
    expect(await send('/ok')).toEqual({ kind: 'answered', status: 200 });
    const req = got.at(-1)!;
    expect(req.headers).toMatchObject({ 'content-type': 'application/json', 'webhook-id': 'msg_run_1_4' });
    expect(Math.abs(Number(req.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    const headers = {
      'webhook-id': String(req.headers['webhook-id']),
      'webhook-timestamp': String(req.headers['webhook-timestamp']),
      'webhook-signature': String(req.headers['webhook-signature']),
    };
    expect(new Webhook(`whsec_${secretB64}`).verify(req.body, headers)).toEqual({ type: 'run.completed' });
    expect(() => new Webhook(Buffer.from('another secret').toString('base64')).verify(req.body, headers)).toThrow();
    expect(() => new Webhook(`whsec_${secretB64}`).verify(`${req.body} `, headers)).toThrow();
  });

  it('any status is an answer, a redirect is not followed, and no answer in time is none', async () => {
    expect(await send('/fail')).toEqual({ kind: 'answered', status: 500 });
    const before = got.length;
    expect(await send('/redirect')).toEqual({ kind: 'answered', status: 307 });
    expect(got.slice(before).map((r) => r.url)).toEqual(['/redirect']);
    expect(await send('/hang', 300)).toEqual({ kind: 'no_answer', message: 'no answer within 300 ms' });
    expect(
      (
        await sendWebhook({
          url: new URL('http://hooks.invalid:1/'),
          target: { address: '127.0.0.1', family: 4 },
          id: 'i',
          body: '{}',
          secret,
          timeoutMs: 1000,
        })
      ).kind,
    ).toBe('no_answer');
  });
});
