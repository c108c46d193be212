import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sseFrames } from '@agentloop/client';
import { InProcessStack } from '../test-support/stack.js';

const APP = 'https://app.example.com';
const DEV = 'http://localhost:5173';
const run = { input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } };

/** Every CORS response header of a response (access-control-*). */
const corsHeaders = (h: Headers) => Object.fromEntries([...h].filter(([name]) => name.startsWith('access-control-')));

/** AGENTLOOP_CORS_ORIGINS: browser apps on the listed origins may call the API, preflights included; no other origin. */
describe('CORS for the listed origins (real HTTP, Origin headers as browsers send them)', () => {
  let s: InProcessStack;
  let url: string;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: () => ({ text: 'hello' }),
      env: { AGENTLOOP_CORS_ORIGINS: `${APP}, ${DEV}` },
    });
    url = s.a.baseUrl;
  });
  afterAll(() => s?.stop());

  const preflight = (path: string, origin: string, method = 'POST') =>
    fetch(`${url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin,
        'access-control-request-method': method,
        'access-control-request-headers': 'authorization, content-type, idempotency-key',
      },
    });

  it('answers a preflight of a listed origin without authentication: its origin, GET and POST, the headers the API reads', async () => {
    for (const origin of [APP, DEV]) {
      const res = await preflight('/v1/runs', origin);
      expect(res.status).toBe(204);
      expect(corsHeaders(res.headers)).toMatchObject({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'GET, POST',
        'access-control-allow-headers': 'Authorization, Content-Type, Idempotency-Key, Last-Event-ID',
      });
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/);
    }
    const events = await preflight('/v1/runs/run_x/events', APP, 'GET');
    expect(events.headers.get('access-control-allow-origin')).toBe(APP);
  });

  it('gives an unlisted origin no CORS header, on a preflight or a request', async () => {
    for (const origin of [
      'https://evil.example',
      'http://app.example.com',
      'https://app.example.com.evil.example',
      'https://app.example.com:8443',
      'null',
    ]) {
      const pre = await preflight('/v1/runs', origin);
      expect(corsHeaders(pre.headers), origin).toEqual({});
      const res = await fetch(`${url}/v1/tools`, { headers: { origin, authorization: 'Bearer key-a' } });
      expect(res.status).toBe(200);
      expect(corsHeaders(res.headers), origin).toEqual({});
      expect(res.headers.get('vary')).toMatch(/\bOrigin\b/); // the same URL answers differently by origin
    }
    // and a request without Origin (not a browser's cross-origin request) none either
    expect(
      corsHeaders((await fetch(`${url}/v1/tools`, { headers: { authorization: 'Bearer key-a' } })).headers),
    ).toEqual({});
  });

  it('lets a listed origin read every answer: a created run, an error, and Retry-After', async () => {
    const created = await fetch(`${url}/v1/runs`, {
      method: 'POST',
      headers: { origin: APP, authorization: 'Bearer key-a', 'content-type': 'application/json' },
      body: JSON.stringify(run),
    });
    expect(created.status).toBe(202);
    expect(corsHeaders(created.headers)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-expose-headers': 'Retry-After',
    });
    expect(created.headers.get('vary')).toMatch(/\bOrigin\b/);
    const unauthorized = await fetch(`${url}/v1/runs`, { headers: { origin: DEV } });
    expect(unauthorized.status).toBe(401);
    expect(unauthorized.headers.get('access-control-allow-origin')).toBe(DEV);
    expect(((await unauthorized.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
  });

  it('streams a run’s events cross-origin, resumable with Last-Event-ID', async () => {
    const id = await s.a.startRun(run);
    await s.a.waitTerminal(id);
    const res = await fetch(`${url}/v1/runs/${id}/events`, {
      headers: { origin: APP, authorization: 'Bearer key-a', 'last-event-id': '1' },
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(corsHeaders(res.headers)).toEqual({
      'access-control-allow-origin': APP,
      'access-control-expose-headers': 'Retry-After',
    });
    const types: string[] = [];
    for await (const frame of sseFrames(res.body as unknown as AsyncIterable<Uint8Array>))
      types.push(frame.event ?? '');
    expect(types[0]).toBe('run.started'); // after seq 1 (run.queued)
    expect(types[types.length - 1]).toBe('run.completed');
  });
});
