import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import express from 'express';
import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';
import { EventHub, RunStore } from '@agentloop/runtime';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { streamEvents } from './sse.js';

describe('SSE replay (real Redis, real HTTP)', () => {
  let redis: Redis;
  let subscriber: Redis;
  let store: RunStore;
  let server: http.Server;
  let url: string;
  const prefix = testPrefix('sse');
  beforeAll(async () => {
    redis = new Redis(testRedisUrl());
    subscriber = new Redis(testRedisUrl());
    store = new RunStore(redis, prefix);
    const hub = new EventHub(subscriber);
    const app = express();
    app.get(
      '/runs/:id/events',
      (req, res, next) => void streamEvents(res, req.params.id, Number(req.query.after ?? 0), store, hub).catch(next),
    );
    server = http.createServer(app);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
    subscriber.disconnect();
  });
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  /** A cancelled run with `deltas` message.delta events (and its few others: run.queued … run.cancelled). */
  const endedRun = async (deltas: number) => {
    const runId = newRunId();
    await store.create({ runId, tenant: 'T', request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await store.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [
        { type: 'run.started', data: {} },
        { type: 'iteration.started', data: { iteration: 1 } },
      ],
    });
    const events: NewEvent[] = Array.from({ length: deltas }, (_, i) => ({
      type: 'message.delta',
      data: { iteration: 1, text: `${i}` },
    }));
    await store.appendEvents(runId, 1, events);
    expect((await store.requestCancel(runId, 'test')).kind).toBe('requested');
    await store.finish(runId, {
      expectIteration: null,
      status: 'cancelled',
      stopReason: 'cancelled',
      error: null,
      events: [{ type: 'run.cancelled', data: { reason: 'test' } }],
    });
    const last = Number(await redis.hget(store.keys.run(runId).state, 'seq'));
    expect(last).toBeGreaterThan(deltas);
    return { runId, seqs: Array.from({ length: last }, (_, i) => i + 1) };
  };
  /** The ids of every frame until the stream closes (it closes after the terminal event), or what came within 10 s. */
  const frameIds = async (runId: string, after = 0) => {
    const res = await fetch(`${url}/runs/${runId}/events?after=${after}`, { signal: AbortSignal.timeout(10_000) });
    let text = '';
    try {
      for await (const chunk of res.body!) text += Buffer.from(chunk).toString();
    } catch {
      return { ids: [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), closed: false };
    }
    return { ids: [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), closed: true };
  };

  it('replays a run of more events than one read takes, to its terminal event, then closes', async () => {
    const { runId, seqs } = await endedRun(1300);
    const { ids, closed } = await frameIds(runId);
    expect(closed).toBe(true);
    expect(ids).toEqual(seqs);
    expect((await frameIds(runId, 900)).ids).toEqual(seqs.slice(900));
  });

  it('steps over a seq missing from the log instead of waiting for it forever', async () => {
    const { runId, seqs } = await endedRun(1300);
    await redis.hdel(store.keys.run(runId).state, 'e:10', 'e:500', 'e:501', 'e:1000');
    const { ids, closed } = await frameIds(runId);
    expect(closed).toBe(true);
    expect(ids).toEqual(seqs.filter((q) => ![10, 500, 501, 1000].includes(q)));
  });
});
