import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster, type Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';
import type { ReplySpec } from '@agentloop/testing';
import { openEventStreams } from '@agentloop/orchestrator/api/sse';
import { InProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

/** Every run asks for an email: it parks, waiting for a decision (a live run whose stream never ends by itself). */
const script = (): ReplySpec => ({ toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'x' } }] });
const body = { input: 'send it', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['send_email'] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Hostile event-stream clients (SPEC §2, §4): ones that leave at once, ones that name a replay point no event has. */
describe('SSE against hostile clients', () => {
  let s: InProcessStack;
  let keys: DeploymentKeys;
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    keys = new DeploymentKeys(s.keyPrefix);
  }, 30_000);
  afterAll(() => s?.stop());

  const pausedRun = async () => {
    const id = await s.a.startRun(body);
    const snap = await s.a.waitFor(id, (r) => r.status === 'paused');
    const seq = Number(await s.redis.hget(keys.run(id).state, 'seq'));
    expect(seq).toBeGreaterThan(0);
    return { id, snap, seq };
  };
  /**
   * Subscribers of the run's events channel. PUBSUB NUMSUB counts a node's own subscribers only: on a Cluster, the sum
   * over every node, replicas too (a Cluster's subscriber connection may be on any of them).
   */
  const subscribers = async (id: string) => {
    const conn = s.redis as Redis | Cluster;
    if (conn instanceof Cluster) await conn.ping(); // connected, so it knows the nodes
    let n = 0;
    for (const node of conn instanceof Cluster ? conn.nodes('all') : [conn])
      n += Number(((await node.pubsub('NUMSUB', keys.run(id).eventsChannel)) as [string, number])[1]);
    return n;
  };

  /** Sends a whole GET of the run's events on a raw socket, then drops the connection after `ms` (0: at once). */
  const connectAndLeave = (id: string, ms: number, query = '') =>
    new Promise<void>((resolve, reject) => {
      const url = new URL(s.a.baseUrl);
      const sock = net.connect(Number(url.port), url.hostname, () => {
        sock.write(
          `GET /v1/runs/${id}/events${query} HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer key-a\r\nAccept: text/event-stream\r\n\r\n`,
        );
        const leave = () => {
          sock.destroy();
          resolve();
        };
        if (ms === 0) leave();
        else setTimeout(leave, ms);
      });
      sock.on('error', reject);
    });

  it('a client that leaves while its stream is set up (many times) leaves no stream, subscription, lease renewal or timer behind', async () => {
    const { id } = await pausedRun();
    const k = keys.run(id);
    // at once (the run is still being read), and a few ms in (subscribing, taking the watch lease, first read)
    for (let i = 0; i < 60; i++) await connectAndLeave(id, [0, 0, 1, 2, 3, 5][i % 6]!);
    await until('every stream closed', () => openEventStreams() === 0, 5_000);
    expect(await subscribers(id)).toBe(0);
    // a stream left behind renews the run's watch lease every 10 s (and polls its events every 2 s): nothing may
    const lease = await s.redis.hget(k.state, 'watch');
    await sleep(11_000);
    expect(await s.redis.hget(k.state, 'watch')).toBe(lease);
    expect(openEventStreams()).toBe(0);
    expect(await subscribers(id)).toBe(0);

    // a client that stays still gets its stream: replay, then live until the terminal event
    const follower = s.a.events(id, { timeoutMs: 20_000 });
    await until('the follower subscribed', async () => (await subscribers(id)) === 1);
    expect(openEventStreams()).toBe(1);
    expect((await s.a.cancel(id)).status).toBe(202);
    const followed = await follower;
    expect(followed.closed).toBe(true);
    expect(followed.events.at(-1)!.type).toBe('run.cancelled');
    await until(
      'the stream released everything',
      async () => openEventStreams() === 0 && (await subscribers(id)) === 0,
      5_000,
    );
  }, 60_000);

  it('a replay point past the last event of a live run is 400; the id of the last event received still resumes', async () => {
    const { id, seq } = await pausedRun();
    for (const opts of [{ after: 99_999_999_999_999 }, { lastEventId: seq + 1 }, { after: seq + 1 }]) {
      const r = await s.a.events(id, { ...opts, timeoutMs: 5_000 });
      expect(r.status, JSON.stringify(opts)).toBe(400);
    }
    const q = await s.a.request('GET', `/v1/runs/${id}/events?after=${seq + 1}`);
    expect(q.json.error).toMatchObject({ code: 'invalid_request', details: [{ path: ['after'] }] });
    expect(q.json.error.message).toContain(`seq ${seq}`);
    const h = await s.a.request('GET', `/v1/runs/${id}/events?after=0`, undefined, {
      'last-event-id': '99999999999999',
    });
    expect(h.status).toBe(400);
    expect(h.json.error.details[0].path).toEqual(['Last-Event-ID']);
    // a standard EventSource resuming from the last id it received: nothing to replay, the stream stays open
    const resumed = await s.a.events(id, { lastEventId: seq, timeoutMs: 3_000 });
    expect(resumed).toMatchObject({ status: 200, events: [], closed: false });
    const one = await s.a.events(id, { lastEventId: seq - 1, maxEvents: 1, timeoutMs: 5_000 });
    expect(one.ids).toEqual([seq]);
    // ended: at or past the terminal event is 204, before it replays up to the terminal event
    expect((await s.a.cancel(id)).status).toBe(202);
    await s.a.waitTerminal(id);
    const last = Number(await s.redis.hget(keys.run(id).state, 'seq'));
    expect((await s.a.events(id, { after: 99_999_999_999_999 })).status).toBe(204);
    expect((await s.a.events(id, { lastEventId: last })).status).toBe(204);
    expect(await s.a.events(id, { after: seq })).toMatchObject({ status: 200, closed: true });
  });

  it('a stream ends when the run’s keys are gone (retention), not only at its terminal event', async () => {
    const { id, seq } = await pausedRun();
    const k = keys.run(id);
    const t0 = Date.now();
    const follower = s.a.events(id, { lastEventId: seq, timeoutMs: 20_000 });
    await until(
      'the follower took the lease',
      async () => (await subscribers(id)) === 1 && (await s.redis.hget(k.state, 'watch')) !== null,
    );
    await s.redis.del(k.state, k.messages);
    const r = await follower;
    expect(r).toMatchObject({ status: 200, events: [], closed: true }); // at the next lease renewal (10 s)
    expect(Date.now() - t0).toBeLessThan(15_000);
    await until(
      'the stream released everything',
      async () => openEventStreams() === 0 && (await subscribers(id)) === 0,
      5_000,
    );
    expect((await s.a.events(id)).status).toBe(404); // an EventSource reconnecting stops there
  }, 30_000);
});
