import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, until } from '../test-support/helpers.js';
import { WebhookReceiver, type Receipt } from '../test-support/webhook-receiver.js';

const SECRET = `whsec_${Buffer.from('agentloop webhook test secret 32').toString('base64')}`;
const script = byScenario(
  {
    plain: (): ReplySpec => ({ text: 'done' }),
    park: (req: MockRequest): ReplySpec =>
      req.messages.some((m) => m.role === 'tool')
        ? { text: 'sent' }
        : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] },
  },
  'plain',
);
const body = (scenario: string, notify: Record<string, unknown>) => ({
  input: `[${scenario}] go`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['send_email'],
  notify,
});
const ids = (rs: Receipt[]) => [...new Set(rs.map((r) => r.headers['webhook-id']))];

/** SPEC §2 Webhooks, through every role in one process, to a real HTTP receiver. */
describe('webhooks', () => {
  let s: InProcessStack;
  let hooks: WebhookReceiver;
  beforeAll(async () => {
    hooks = await WebhookReceiver.start();
    s = await InProcessStack.start({
      script,
      env: {
        AGENTLOOP_WEBHOOK_SECRETS: `tenant-a=${SECRET}`, // tenant-b has none
        AGENTLOOP_WEBHOOK_RETRY_BASE_MS: '50',
        AGENTLOOP_WEBHOOK_TIMEOUT_MS: '500',
        AGENTLOOP_WEBHOOK_ALLOWED_URLS: hooks.origin, // the receiver is on 127.0.0.1
      },
    });
  }, 30_000);
  afterAll(async () => {
    await s?.stop();
    await hooks?.down();
  });
  const deliveries = async (runId: string) =>
    (await s.a.request('GET', `/v1/runs/${runId}/webhooks`)).json.data as Array<Record<string, unknown>>;
  const delivered = (runId: string, n: number) =>
    until(`${n} deliveries of ${runId}`, async () => {
      const d = await deliveries(runId);
      return d.length === n && d.every((x) => x.status === 'delivered');
    });

  it('a run that completes: run.completed POSTed once, signed (standardwebhooks verifies it), listed as delivered', async () => {
    const runId = await s.a.startRun(body('plain', { url: hooks.url('/plain') }));
    await s.a.waitTerminal(runId);
    await delivered(runId, 1);
    const [r] = hooks.of(runId);
    expect(hooks.of(runId)).toHaveLength(1);
    expect(WebhookReceiver.verifies(r!, SECRET)).toBe(true);
    const events = (await s.a.events(runId)).events;
    const completed = events.find((e) => e.type === 'run.completed')!;
    expect(r!.headers['webhook-id']).toBe(`msg_${runId}_${completed.seq}`);
    expect(JSON.parse(r!.body)).toEqual({
      type: 'run.completed',
      timestamp: completed.at,
      data: { runId, event: completed, run: (await s.a.getRun(runId)).json },
    });
    expect(await deliveries(runId)).toEqual([
      {
        webhookId: `msg_${runId}_${completed.seq}`,
        type: 'run.completed',
        status: 'delivered',
        attempts: 1,
        lastStatusCode: 200,
        nextAttemptAt: null,
      },
    ]);
    const ttl = await s.redis.pttl(`${s.keyPrefix}:run:{${runId}}:webhooks`);
    expect(ttl).toBeGreaterThan(0); // the delivery log expires with the run
    expect(ttl).toBeLessThanOrEqual((await s.redis.pttl(`${s.keyPrefix}:run:{${runId}}`)) + 1000);
  });

  it('retries after 500s and after a timeout with the same webhook-id and the same body, until a 2xx', async () => {
    const plan: Array<number | 'hang'> = [500, 'hang', 503, 204];
    hooks.answer = (r) =>
      r.path === '/retry' ? (plan[hooks.receipts.filter((x) => x.path === '/retry').length - 1] ?? 204) : 200;
    const runId = await s.a.startRun(body('plain', { url: hooks.url('/retry') }));
    await delivered(runId, 1);
    const got = hooks.of(runId);
    expect(got).toHaveLength(4);
    expect(ids(got)).toHaveLength(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    for (const r of got) expect(WebhookReceiver.verifies(r, SECRET)).toBe(true);
    expect(await deliveries(runId)).toEqual([
      expect.objectContaining({ status: 'delivered', attempts: 4, lastStatusCode: 204, nextAttemptAt: null }),
    ]);
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    expect(
      Number(/agentloop_webhook_deliveries_total\{outcome="retried"\} (\d+)/.exec(metrics)?.[1]),
    ).toBeGreaterThanOrEqual(3);
    expect(
      Number(/agentloop_webhook_deliveries_total\{outcome="delivered"\} (\d+)/.exec(metrics)?.[1]),
    ).toBeGreaterThanOrEqual(2);
  });

  it('keeps order under retries: run.completed is not delivered before run.paused is answered 2xx', async () => {
    let pausedMayPass = false;
    hooks.answer = (r) => (r.type === 'run.paused' && !pausedMayPass ? 500 : 200);
    const runId = await s.a.startRun(body('park', { url: hooks.url('/order') }));
    const paused = await s.a.waitFor(runId, (x) => x.status === 'paused');
    await until('run.paused refused twice', () => hooks.of(runId).length >= 2);
    expect(
      (
        await s.a.request('POST', `/v1/runs/${runId}/decisions`, {
          decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
        })
      ).status,
    ).toBe(202);
    await s.a.waitTerminal(runId);
    await until('run.completed logged behind run.paused', async () => (await deliveries(runId)).length === 2);
    const refused = hooks.of(runId).length;
    await until('two more refusals of run.paused since', () => hooks.of(runId).length >= refused + 2);
    expect(hooks.of(runId).every((r) => r.type === 'run.paused')).toBe(true); // completed waits
    expect(await deliveries(runId)).toEqual([
      expect.objectContaining({
        type: 'run.paused',
        status: 'pending',
        lastStatusCode: 500,
        nextAttemptAt: expect.any(String),
      }),
      expect.objectContaining({ type: 'run.completed', status: 'pending', attempts: 0, lastStatusCode: null }),
    ]);
    pausedMayPass = true;
    await delivered(runId, 2);
    const types = hooks.of(runId).map((r) => r.type);
    expect(types.indexOf('run.completed')).toBe(types.lastIndexOf('run.paused') + 1);
    expect(types.filter((t) => t === 'run.completed')).toHaveLength(1);
    // every attempt of run.paused sent the body of its first attempt: the run as it was then (paused), not as it is now
    const pausedBodies = new Set(
      hooks
        .of(runId)
        .filter((r) => r.type === 'run.paused')
        .map((r) => r.body),
    );
    expect(pausedBodies.size).toBe(1);
    expect(JSON.parse([...pausedBodies][0]!).data.run.status).toBe('paused');
  });

  it('a receiver that is down for a while gets every delivery, in order, once it is back', async () => {
    hooks.answer = () => 200;
    await hooks.down();
    const runId = await s.a.startRun(
      body('plain', { url: hooks.url('/down'), events: ['run.queued', 'run.started', 'run.completed'] }),
    );
    await s.a.waitTerminal(runId);
    await until(
      'attempts against the closed port',
      async () => ((await deliveries(runId))[0]?.attempts as number) >= 3,
    );
    await hooks.up();
    await delivered(runId, 3);
    expect(hooks.of(runId).map((r) => r.type)).toEqual(['run.queued', 'run.started', 'run.completed']);
    expect((await deliveries(runId)).map((d) => d.lastStatusCode)).toEqual([200, 200, 200]);
  });

  it('refuses at intake (400, the field in details) a notify.url that is not http(s) or reaches a private address outside the allowed prefixes', async () => {
    for (const url of [
      `http://localhost:${hooks.portNumber}/x`,
      'http://169.254.169.254/latest/meta-data/',
      'http://10.0.0.1/hook',
      'http://[::1]/hook',
      `http://127.0.0.1:${hooks.portNumber + 1}/`,
    ]) {
      const r = await s.a.createRun(body('plain', { url }));
      expect(r.status, url).toBe(400);
      expect(r.json.error).toMatchObject({
        code: 'invalid_request',
        details: [
          expect.objectContaining({ path: ['notify', 'url'], message: expect.stringContaining('resolves to') }),
        ],
      });
    }
    for (const url of ['ftp://example.com/h', `https://hooks.example/${'a'.repeat(8200)}`]) {
      const r = await s.a.createRun(body('plain', { url }));
      expect(r.status).toBe(400);
      expect(r.json.error.details[0].path).toEqual(['notify', 'url']);
    }
  });

  it('a tenant without a signing secret cannot use notify (400)', async () => {
    const r = await s.b.createRun(body('plain', { url: hooks.url('/b') }));
    expect(r.status).toBe(400);
    expect(r.json.error.details).toEqual([
      expect.objectContaining({ path: ['notify'], message: expect.stringContaining('no webhook signing secret') }),
    ]);
  });

  it("lists another tenant's run like a missing one (404); a run without notify has no deliveries", async () => {
    const runId = await s.a.startRun({ input: '[plain] x', model: { provider: 'openai', name: 'gpt-4o-mini' } });
    expect((await s.a.request('GET', `/v1/runs/${runId}/webhooks`)).json).toEqual({ data: [] });
    const other = await s.b.request('GET', `/v1/runs/${runId}/webhooks`);
    const missing = await s.b.request('GET', '/v1/runs/run_missing/webhooks');
    expect(other.status).toBe(404);
    expect(other.json.error.code).toBe(missing.json.error.code);
    const openapi = (await s.anon.request('GET', '/v1/openapi.json')).json;
    expect(openapi.paths['/v1/runs/{id}/webhooks'].get.responses['200'].content['application/json'].schema).toEqual({
      $ref: '#/components/schemas/WebhookDeliveries',
    });
    expect(Object.keys(openapi.components.schemas.WebhookDeliveries.properties.data.items.properties)).toEqual([
      'webhookId',
      'type',
      'status',
      'attempts',
      'lastStatusCode',
      'nextAttemptAt',
    ]);
  });
});
