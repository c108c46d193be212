import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeploymentKeys, type RunSnapshot } from '@agentloop/protocol';
import { RedisServer, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario } from '../test-support/helpers.js';

const hasToolResult = (req: MockRequest) => req.messages.some((m) => m.role === 'tool');
const script = byScenario(
  {
    answer: (): ReplySpec => ({ text: JSON.stringify({ label: 'seventeen', value: 17 }) }),
    park: (req): ReplySpec =>
      hasToolResult(req) ? { text: 'sent' } : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'x' } }] },
  },
  'answer',
);
const RESULT = {
  type: 'object',
  properties: { label: { type: 'string' }, value: { type: 'integer' } },
  required: ['label', 'value'],
};
/** A large request (the system prompt), of which a snapshot shows nothing. */
const SYSTEM = 'You are a careful assistant. '.repeat(10_000);
const body = (scenario: string, structured: boolean) => ({
  input: `[${scenario}] go`,
  system: SYSTEM,
  model: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat', contextWindow: 1_000_000 },
  tools: ['send_email'],
  metadata: { scenario, structured },
  ...(structured ? { output: { schema: RESULT, name: 'result' } } : {}),
});

/** Bytes Redis has sent to its clients so far. */
const sentBytes = async (redis: Redis) => Number(/total_net_output_bytes:(\d+)/.exec(await redis.info('stats'))![1]);

/** GET /v1/runs (SPEC §2) reads what the snapshots show, not each run's request (up to 1 MiB each). */
describe('listing runs', () => {
  let server: RedisServer;
  let s: InProcessStack;
  beforeAll(async () => {
    server = await RedisServer.start(); // its own: the bytes it sends are this test's
    s = await InProcessStack.start({ redisUrl: server.url, script });
  }, 30_000);
  afterAll(async () => {
    await s?.stop();
    await server?.stop();
  });

  it('lists the same snapshots as GET /v1/runs/:id (outputJson only for structured runs) without reading any request', async () => {
    const runs = [
      { id: await s.a.startRun(body('answer', true)), until: 'completed' },
      { id: await s.a.startRun(body('park', true)), until: 'paused' },
      { id: await s.a.startRun(body('answer', false)), until: 'completed' },
      { id: await s.a.startRun(body('park', false)), until: 'paused' },
      { id: await s.a.startRun(body('park', true)), until: 'cancelled' },
    ];
    for (const r of runs)
      await s.a.waitFor(r.id, (snap) => snap.status === (r.until === 'cancelled' ? 'paused' : r.until));
    await s.a.cancel(runs[4]!.id);
    await s.a.waitFor(runs[4]!.id, (snap) => snap.status === 'cancelled');
    const expected = new Map<string, RunSnapshot>();
    for (const r of runs) expected.set(r.id, (await s.a.getRun(r.id)).json);
    expect(expected.get(runs[0]!.id)).toMatchObject({
      status: 'completed',
      outputJson: { label: 'seventeen', value: 17 },
    });
    expect(expected.get(runs[1]!.id)).toMatchObject({ status: 'paused', outputJson: null });
    expect(expected.get(runs[4]!.id)).toMatchObject({ status: 'cancelled', outputJson: null });
    expect(expected.get(runs[2]!.id)).not.toHaveProperty('outputJson');
    expect(expected.get(runs[3]!.id)).not.toHaveProperty('outputJson');

    const keys = new DeploymentKeys(s.prefix);
    const requestBytes = (await Promise.all(runs.map((r) => s.redis.hstrlen(keys.run(r.id).state, 'request')))).reduce(
      (a, b) => a + b,
      0,
    );
    expect(requestBytes).toBeGreaterThan(runs.length * 250_000);

    // runs whose state says whether they are structured (set at creation); then runs of an earlier build, without
    // that field, whose requests are read one at a time
    for (const pass of [1, 2]) {
      if (pass === 2) for (const r of runs) await s.redis.hdel(keys.run(r.id).state, 'structured');
      const before = await sentBytes(s.redis);
      const listed = await s.a.request<{ data: RunSnapshot[]; nextCursor: string | null }>('GET', '/v1/runs?limit=200');
      const sent = (await sentBytes(s.redis)) - before;
      expect(listed.status).toBe(200);
      expect(listed.json.data.map((d) => d.id)).toEqual(runs.map((r) => r.id).reverse()); // newest first
      for (const snap of listed.json.data) expect(snap, `pass ${pass}`).toStrictEqual(expected.get(snap.id));
      const paused = await s.a.request<{ data: RunSnapshot[] }>('GET', '/v1/runs?status=paused&limit=200');
      expect(paused.json.data).toStrictEqual([expected.get(runs[3]!.id), expected.get(runs[1]!.id)]);
      if (pass === 1)
        expect(sent, `bytes Redis sent for a listing (the requests are ${requestBytes})`).toBeLessThan(100_000);
    }
  }, 60_000);
});
