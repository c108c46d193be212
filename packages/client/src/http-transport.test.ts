import { describe, expect, it } from 'vitest';
import { RunSnapshotSchema } from '@agentloop/protocol';
import { AgentloopError } from './api-error.js';
import { AgentloopClient } from './agentloop-client.js';
import { HttpTransport } from './http-transport.js';

/** A fetch that answers every request with `res` and records what was asked. */
function fakeFetch(res: () => Response) {
  const asked: Array<{ url: string; init: RequestInit }> = [];
  const fetch = (async (url: string, init: RequestInit) => {
    asked.push({ url, init });
    return res();
  }) as typeof globalThis.fetch;
  return { fetch, asked };
}
const json =
  (status: number, body: unknown, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as AgentloopError,
  );

describe('the client over HTTP: requests, errors and answers', () => {
  it('sends the key only in the Authorization header, JSON bodies, the Idempotency-Key and the query', async () => {
    const { fetch, asked } = fakeFetch(
      json(202, { id: 'run_1', status: 'queued', eventsUrl: '/v1/runs/run_1/events' }),
    );
    const client = new AgentloopClient({
      baseUrl: 'http://api.test/',
      apiKey: 'k1',
      fetch,
      headers: { 'x-trace': 't' },
    });
    expect(
      await client.runs.create({ input: 'hi', model: { provider: 'openai', name: 'm' } }, { idempotencyKey: 'idem 1' }),
    ).toEqual({ id: 'run_1', status: 'queued', eventsUrl: '/v1/runs/run_1/events' });
    expect(asked[0]!.url).toBe('http://api.test/v1/runs');
    expect(asked[0]!.init.headers).toMatchObject({
      authorization: 'Bearer k1',
      'idempotency-key': 'idem 1',
      'content-type': 'application/json',
      'x-trace': 't',
    });
    expect(JSON.parse(String(asked[0]!.init.body))).toEqual({ input: 'hi', model: { provider: 'openai', name: 'm' } });
    await client.runs.get('a/b', { include: ['messages', 'history'] }).catch(() => {});
    expect(asked[1]!.url).toBe('http://api.test/v1/runs/a%2Fb?include=messages%2Chistory');
    expect(asked.every((a) => !a.url.includes('k1'))).toBe(true);
  });

  it('throws the SPEC error body as AgentloopError, with Retry-After in seconds or as a date', async () => {
    const limited = await failure(
      new HttpTransport({
        baseUrl: 'http://x',
        fetch: fakeFetch(json(429, { error: { code: 'rate_limited', message: 'slow down' } }, { 'retry-after': '2' }))
          .fetch,
      }).json('GET', '/v1/tools', RunSnapshotSchema),
    );
    expect(limited).toMatchObject({
      status: 429,
      code: 'rate_limited',
      message: 'slow down',
      retryAfterMs: 2000,
      retryable: true,
    });
    const at = new Date(Date.now() + 10_000).toUTCString();
    const unavailable = await failure(
      new HttpTransport({ baseUrl: 'http://x', fetch: fakeFetch(json(503, {}, { 'retry-after': at })).fetch }).json(
        'GET',
        '/v1/tools',
        RunSnapshotSchema,
      ),
    );
    expect(unavailable).toMatchObject({ status: 503, code: 'http_error', retryable: true });
    expect(unavailable!.retryAfterMs).toBeGreaterThan(8000);
    const invalid = await failure(
      new HttpTransport({
        baseUrl: 'http://x',
        fetch: fakeFetch(
          json(400, { error: { code: 'invalid_request', message: 'bad', details: [{ path: ['input'] }] } }),
        ).fetch,
      }).json('GET', '/', RunSnapshotSchema),
    );
    expect(invalid).toMatchObject({
      status: 400,
      code: 'invalid_request',
      details: [{ path: ['input'] }],
      retryable: false,
    });
  });

  it('says when there was no answer (status 0, network_error) and when the answer is not what the API promises', async () => {
    const refused = (async () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
    }) as typeof fetch;
    const down = await failure(new AgentloopClient({ baseUrl: 'http://127.0.0.1:1', fetch: refused }).tools.list());
    expect(down).toMatchObject({
      status: 0,
      code: 'network_error',
      retryable: true,
      message: expect.stringContaining('ECONNREFUSED'),
    });
    const odd = await failure(
      new AgentloopClient({
        baseUrl: 'http://x',
        fetch: fakeFetch(json(200, { data: [{ name: 'x' }] })).fetch,
      }).tools.list(),
    );
    expect(odd).toMatchObject({ status: 200, code: 'invalid_response' });
    const html = await failure(
      new AgentloopClient({
        baseUrl: 'http://x',
        fetch: fakeFetch(() => new Response('<html>', { status: 200 })).fetch,
      }).tools.list(),
    );
    expect(html).toMatchObject({ code: 'invalid_response', message: expect.stringContaining('not JSON') });
  });

  it('keeps fields a newer server adds to an answer', async () => {
    const { fetch } = fakeFetch(
      json(200, {
        data: [{ name: 't', description: '', parameters: {}, sideEffect: 'read', pool: 'default', cost: 3 }],
      }),
    );
    expect(await new AgentloopClient({ baseUrl: 'http://x', fetch }).tools.list()).toEqual([
      { name: 't', description: '', parameters: {}, sideEffect: 'read', pool: 'default', cost: 3 },
    ]);
  });

  it('lists runs a page at a time, following nextCursor to the last page', async () => {
    const pages = [
      { data: [], nextCursor: 'c1' },
      { data: [], nextCursor: 'c2' },
      { data: [], nextCursor: null },
    ];
    let n = 0;
    const { fetch, asked } = fakeFetch(() => json(200, pages[n++])());
    const got = [];
    for await (const page of new AgentloopClient({ baseUrl: 'http://x', fetch }).runs.list({
      status: 'paused',
      limit: 2,
    }))
      got.push(page.nextCursor);
    expect(got).toEqual(['c1', 'c2', null]);
    expect(asked.map((a) => a.url)).toEqual([
      'http://x/v1/runs?status=paused&limit=2',
      'http://x/v1/runs?status=paused&limit=2&cursor=c1',
      'http://x/v1/runs?status=paused&limit=2&cursor=c2',
    ]);
  });
});
