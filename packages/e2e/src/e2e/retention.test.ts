import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, scanKeys, until } from '../test-support/helpers.js';

const hasToolResult = (req: MockRequest) => req.messages.some((m) => m.role === 'tool');
const script = byScenario(
  {
    calc: (req): ReplySpec =>
      hasToolResult(req) ? { text: 'done' } : { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] },
    park: (req): ReplySpec =>
      hasToolResult(req) ? { text: 'sent' } : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] },
    slow: (): ReplySpec => ({ text: 'slow answer', delayMs: 200, chunking: 'fine' }),
    plain: (): ReplySpec => ({ text: 'ok' }),
  },
  'plain',
);
const body = (scenario: string, extra: Record<string, unknown> = {}) => ({
  input: `[${scenario}] go`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['calculator', 'send_email'],
  ...extra,
});

/** Every key under the stack's prefix whose name contains the run id. */
async function keysOf(s: InProcessStack, runId: string): Promise<string[]> {
  // (a queue-intake run's job on `results` is the backend's message to consume, not a key of the run: BullMQ keeps it
  // until the backend takes it, then for the retention — see the results-queue tests)
  return (await scanKeys(s.redis, `*${runId}*`)).filter(
    (k) => k.includes(s.keyPrefix) && !k.startsWith(`${s.keyPrefix}:${QUEUES.results}:`),
  );
}

/** Every index (sorted set) of the deployment that still lists the run. */
async function indexesListing(s: InProcessStack, runId: string): Promise<string[]> {
  const out: string[] = [];
  const indexes = await scanKeys(s.redis, `${s.keyPrefix}:*`, 'zset');
  for (const k of indexes) if ((await s.redis.zscore(k, runId)) !== null) out.push(k);
  for (const k of indexes) if ((await s.redis.zscan(k, '0', 'MATCH', `${runId}|*`))[1].length) out.push(k);
  return out;
}

describe('retention (AGENTLOOP_RUN_RETENTION_S)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    // 6 s: long enough that a run finished early still has a TTL when the checks below read it on a slow machine
    // (the sweeper then runs every second: min(60 s, max(1 s, retention × 100 ms)))
    s = await InProcessStack.start({ script, env: { AGENTLOOP_RUN_RETENTION_S: '6' } });
  }, 30_000);
  afterAll(() => s?.stop());

  it('removes every key and index entry of a finished run after the retention; a paused run stays whole', async () => {
    const completed = await s.a.startRun(body('calc'));
    const cancelled = await s.a.startRun(body('slow'));
    const paused = await s.a.startRun(body('park'));
    const queue = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    const failed = `ret_failed_${Date.now()}`;
    await queue.add('run', { tenantId: 'tenant-a', runId: failed, request: { input: 'x' } }); // invalid: created failed
    await queue.close();
    await s.a.cancel(cancelled);
    await s.a.waitFor(paused, (r) => r.status === 'paused');
    for (const id of [completed, cancelled, failed]) await s.a.waitTerminal(id);
    expect((await s.a.getRun(completed)).json.status).toBe('completed');
    expect((await s.a.getRun(failed)).json.status).toBe('failed');

    // while retained: readable, listed, and every key of it carries a TTL no longer than the retention
    for (const id of [completed, cancelled, failed]) {
      const keys = await keysOf(s, id);
      expect(keys).toContain(`${s.keyPrefix}:run:{${id}}`); // the state hash (with the events) at least
      for (const k of keys) {
        const ttl = await s.redis.pttl(k);
        expect(ttl, k).toBeGreaterThan(0);
        expect(ttl, k).toBeLessThanOrEqual(6000);
      }
    }
    const pausedKeys = await keysOf(s, paused);
    for (const k of pausedKeys.filter((k) => !k.includes(':tools-') && !k.includes(':orchestrator:')))
      expect(await s.redis.ttl(k), k).toBe(-1);

    await until(
      'finished runs expire and are swept',
      async () => {
        const left = await Promise.all(
          [completed, cancelled, failed].map(async (id) => [
            ...(await keysOf(s, id)),
            ...(await indexesListing(s, id)),
          ]),
        );
        return left.every((l) => l.length === 0);
      },
      25_000,
    );
    for (const id of [completed, cancelled, failed]) expect((await s.a.getRun(id)).status).toBe(404);
    const listed = (await s.a.request('GET', '/v1/runs?limit=200')).json.data.map((r: { id: string }) => r.id);
    expect(listed).toContain(paused);
    for (const id of [completed, cancelled, failed]) expect(listed).not.toContain(id);

    // the paused run never expires: it is still whole and can be resumed
    expect((await s.a.getRun(paused)).json.status).toBe('paused');
    const call = (await s.a.getRun(paused)).json.pending[0]!.callId;
    expect(
      (await s.a.request('POST', `/v1/runs/${paused}/decisions`, { decisions: [{ callId: call, action: 'approve' }] }))
        .status,
    ).toBe(202);
    expect((await s.a.waitTerminal(paused)).status).toBe('completed');
  }, 90_000);
});

describe('listing (GET /v1/runs)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
  }, 30_000);
  afterAll(() => s?.stop());

  it('pages newest first with a keyset cursor that never repeats or skips a run while new runs arrive', async () => {
    const before: string[] = [];
    for (let i = 0; i < 23; i++) before.push(await s.b.startRun(body('plain')));
    const seen: string[] = [];
    let cursor: string | null = '';
    let pages = 0;
    const arriving: string[] = [];
    while (cursor !== null) {
      const r: { status: number; json: any } = await s.b.request(
        'GET',
        `/v1/runs?limit=4${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      expect(r.status).toBe(200);
      seen.push(...r.json.data.map((x: { id: string }) => x.id));
      cursor = r.json.nextCursor;
      pages++;
      arriving.push(await s.b.startRun(body('plain'))); // new runs arrive between pages
    }
    expect(pages).toBe(6);
    expect(seen).toEqual([...before].reverse()); // each once, newest first, none of the newcomers
    expect((await s.b.request('GET', '/v1/runs?cursor=garbage')).status).toBe(400);

    // the status filter reads its own index: completed runs, newest first, across pages
    await until('runs complete', async () =>
      (await Promise.all([...before, ...arriving].map(async (id) => (await s.b.getRun(id)).json.status))).every(
        (x) => x === 'completed',
      ),
    );
    const completedIds: string[] = [];
    cursor = '';
    while (cursor !== null) {
      const r: { status: number; json: any } = await s.b.request(
        'GET',
        `/v1/runs?status=completed&limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
      );
      completedIds.push(...r.json.data.map((x: { id: string; status: string }) => x.id));
      expect(r.json.data.every((x: { status: string }) => x.status === 'completed')).toBe(true);
      cursor = r.json.nextCursor;
    }
    expect(completedIds).toEqual([...before, ...arriving].reverse());
    expect((await s.b.request('GET', '/v1/runs?status=queued')).json.data).toEqual([]);
  }, 60_000);
});
