import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { ApiClient } from '../test-support/api-client.js';
import { ProcessStack } from '../test-support/stack.js';
import { byScenario } from '../test-support/helpers.js';

const script = byScenario(
  {
    park: (req: MockRequest): ReplySpec =>
      req.messages.some((m) => m.role === 'tool')
        ? { text: 'sent' }
        : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] },
    plain: (): ReplySpec => ({ text: 'ok' }),
  },
  'plain',
);
const body = (scenario: string) => ({
  input: `[${scenario}] go`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['send_email'],
});

/**
 * AGENTLOOP_TENANT_LIMITS with two api processes: one token bucket per tenant shared through Redis (on the Redis
 * clock), the activeRuns cap enforced atomically with run creation over HTTP and the requests queue.
 */
describe('tenant limits across two api processes', () => {
  let s: ProcessStack;
  let api1: ApiClient;
  let api2: ApiClient;
  let api1b: ApiClient;
  let api2b: ApiClient;

  beforeAll(async () => {
    s = await ProcessStack.start(['orchestrator', 'tool-runner', 'api'], {
      script,
      env: {
        AGENTLOOP_TENANT_LIMITS: JSON.stringify({
          'tenant-a': { requestsPerSecond: 2, burst: 10 },
          '*': { activeRuns: 2 },
        }),
      },
    });
    api1 = s.a;
    api1b = s.b;
    await s.spawn('api#2', { AGENTLOOP_PORT: '0' });
    api2 = s.a;
    api2b = s.b;
    expect(api1.baseUrl).not.toBe(api2.baseUrl);
  }, 60_000);
  afterAll(() => s?.stop());

  it('shares one request bucket between the processes: a burst, then 429 with Retry-After; other tenants unaffected', async () => {
    const t0 = Date.now();
    // at once (not one after another): the bucket cannot refill to the full 30 between them on a slow machine
    const responses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? api1 : api2).request('GET', '/v1/tools')),
    );
    const elapsedS = (Date.now() - t0) / 1000;
    const statuses = responses.map((r) => r.status);
    let retryAfter: string | null = null;
    for (const r of responses.filter((x) => x.status === 429)) {
      retryAfter = r.headers.get('retry-after');
      expect(r.json.error.code).toBe('rate_limited');
    }
    const admitted = statuses.filter((x) => x === 200).length;
    expect(statuses.every((x) => x === 200 || x === 429)).toBe(true);
    // the burst of 10 plus what the rate of 2/s refilled meanwhile: one bucket, not one per process (that would be 20+)
    expect(admitted).toBeGreaterThanOrEqual(10);
    expect(admitted).toBeLessThanOrEqual(10 + Math.ceil(elapsedS * 2) + 1);
    expect(Number(retryAfter)).toBeGreaterThanOrEqual(1);
    // tenant b has no rate: never limited, on either process
    for (let i = 0; i < 20; i++) expect((await (i % 2 ? api1b : api2b).request('GET', '/v1/tools')).status).toBe(200);
    const metrics = (await api1.request('GET', '/metrics')).text + (await api2.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_rate_limited_total\{limit="requests"\} [1-9]/);
  });

  it('caps active runs atomically over HTTP (429) and on the requests queue (a failed rate_limited run)', async () => {
    // tenant b (the `*` entry: activeRuns 2): 6 racing creates of runs that park → exactly 2 created
    const racing = await Promise.all(
      Array.from({ length: 6 }, (_, i) => (i % 2 ? api1b : api2b).createRun(body('park'))),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([202, 202, 429, 429, 429, 429]);
    const limited = racing.find((r) => r.status === 429)!;
    expect(limited.json.error.code).toBe('rate_limited');
    expect(limited.headers.get('retry-after')).toBeTruthy();
    const ids = racing.filter((r) => r.status === 202).map((r) => r.json.id as string);
    for (const id of ids) await s.b.waitFor(id, (r) => r.status === 'paused');

    const queue = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    const runId = `limited_${Date.now()}`;
    await queue.add('run', { tenantId: 'tenant-b', runId, request: body('plain') });
    await queue.close();
    const snap = await s.b.waitTerminal(runId);
    expect(snap).toMatchObject({ status: 'failed', error: { code: 'rate_limited' } });

    // a run that ends frees its place
    const first = (await s.b.getRun(ids[0]!)).json;
    await s.b.request('POST', `/v1/runs/${ids[0]}/decisions`, {
      decisions: [{ callId: first.pending[0]!.callId, action: 'deny' }],
    });
    await s.b.waitTerminal(ids[0]!);
    const again = await s.b.createRun(body('plain'));
    expect(again.status).toBe(202);
    const metrics = (await api1b.request('GET', '/metrics')).text + (await api2b.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_rate_limited_total\{limit="active_runs"\} [1-9]/);
  }, 60_000);
});
