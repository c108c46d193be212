import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import type { ApiClient } from '../test-support/api-client.js';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

/** A run that parks for approval: its event stream stays open until the run ends. */
const script = (req: MockRequest): ReplySpec =>
  req.messages.some((m) => m.role === 'tool')
    ? { text: 'sent' }
    : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] };
const parkingRun = { input: 'send it', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['send_email'] };

interface OpenStream {
  status: number;
  retryAfter: string | null;
  code: string | undefined;
  /** The client leaves (aborts the request). */
  leave(): void;
  /** Resolves when the server ends the stream (or the client left). */
  ended: Promise<void>;
}

/** Opens GET /v1/runs/:id/events and keeps it open (its frames are read and dropped) until `leave`. */
async function openStream(client: ApiClient, runId: string): Promise<OpenStream> {
  const ac = new AbortController();
  const res = await fetch(`${client.baseUrl}/v1/runs/${runId}/events`, {
    headers: { authorization: `Bearer ${client.key}` },
    signal: ac.signal,
  });
  const leave = () => ac.abort();
  if (res.status !== 200) {
    const body = (await res.json()) as { error?: { code?: string } };
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      code: body.error?.code,
      leave,
      ended: Promise.resolve(),
    };
  }
  const ended = (async () => {
    try {
      for await (const _ of res.body!) void _;
    } catch {
      // aborted by the client, or cut by a draining server
    }
  })();
  return { status: 200, retryAfter: null, code: undefined, leave, ended };
}

/**
 * AGENTLOOP_TENANT_LIMITS `streams` with two api processes: one count per tenant in Redis, shared by both; a slot
 * is given back however the stream ends.
 */
describe('tenant streams limit across two api processes', () => {
  let s: ProcessStack;
  let api1: { a: ApiClient; b: ApiClient };
  let api2: { a: ApiClient; b: ApiClient };
  const open: OpenStream[] = [];
  const openStreams = (tenant: string) => s.redis.zcard(`${s.keyPrefix}:tenant:${tenant}:streams`);
  const streamOn = async (client: ApiClient, runId: string) => {
    const st = await openStream(client, runId);
    open.push(st);
    return st;
  };
  const parked = async (client: ApiClient) => {
    const id = await client.startRun(parkingRun);
    await client.waitFor(id, (r) => r.status === 'paused');
    return id;
  };

  beforeAll(async () => {
    s = await ProcessStack.start(['orchestrator', 'tool-runner', 'api'], {
      script,
      env: { AGENTLOOP_TENANT_LIMITS: JSON.stringify({ 'tenant-a': { streams: 2 }, '*': { streams: 3 } }) },
    });
    api1 = { a: s.a, b: s.b };
    await s.spawn('api#2', { AGENTLOOP_PORT: '0' });
    api2 = { a: s.a, b: s.b };
    expect(api1.a.baseUrl).not.toBe(api2.a.baseUrl);
  }, 60_000);
  afterAll(async () => {
    for (const st of open) st.leave();
    await s?.stop();
  });

  it('a tenant at its limit gets 429 rate_limited with Retry-After on either process; another tenant opens its own', async () => {
    const runA = await parked(api1.a);
    expect((await streamOn(api1.a, runA)).status).toBe(200);
    expect((await streamOn(api2.a, runA)).status).toBe(200);
    expect(await openStreams('tenant-a')).toBe(2);
    for (const api of [api1, api2]) {
      const refused = await streamOn(api.a, runA);
      expect(refused).toMatchObject({ status: 429, code: 'rate_limited' });
      expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    // tenant b (the `*` entry, 3 streams) is unaffected by tenant a's count
    const runB = await parked(api1.b);
    for (const api of [api1, api2, api1]) expect((await streamOn(api.b, runB)).status).toBe(200);
    expect((await streamOn(api2.b, runB)).status).toBe(429);
    expect(await openStreams('tenant-a')).toBe(2);
    const metrics = (await api1.a.request('GET', '/metrics')).text + (await api2.a.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_rate_limited_total\{limit="streams"\} [1-9]/);
  });

  it('gives the slot back when the client leaves, when the stream ends with its run, and when its api process drains', async () => {
    for (const st of open.splice(0)) st.leave();
    await until(
      'every client left',
      async () => (await openStreams('tenant-a')) + (await openStreams('tenant-b')) === 0,
    );

    // the client leaves: its slot comes back
    const run = await parked(api1.a);
    const left = await streamOn(api1.a, run);
    const kept = await streamOn(api2.a, run);
    expect([left.status, kept.status, (await streamOn(api1.a, run)).status]).toEqual([200, 200, 429]);
    left.leave();
    await until('the slot of the stream the client left', async () => (await openStreams('tenant-a')) === 1);
    const another = await streamOn(api2.a, run);
    expect(another.status).toBe(200);

    // the run ends: its streams close after the terminal event, and their slots come back
    expect((await api1.a.cancel(run)).status).toBe(202);
    await Promise.all([kept.ended, another.ended]);
    await until('the slots of the streams that ended', async () => (await openStreams('tenant-a')) === 0);

    // an api process drains (SIGTERM) with a stream open: its slot comes back, the other process's stays
    const run2 = await parked(api1.a);
    expect((await streamOn(api1.a, run2)).status).toBe(200);
    expect((await streamOn(api2.a, run2)).status).toBe(200);
    expect((await streamOn(api1.a, run2)).status).toBe(429);
    await s.kill('api#2', 'SIGTERM');
    await until('the slot of the drained process', async () => (await openStreams('tenant-a')) === 1);
    expect((await streamOn(api1.a, run2)).status).toBe(200);
    expect(await openStreams('tenant-a')).toBe(2);
  }, 60_000);
});
