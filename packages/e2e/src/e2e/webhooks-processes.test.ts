import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';
import { WebhookReceiver } from '../test-support/webhook-receiver.js';

const SECRET = `whsec_${Buffer.from('agentloop webhook crash secret!!').toString('base64')}`;
const run = (url: string) => ({ input: 'go', model: { provider: 'openai', name: 'gpt-4o-mini' }, notify: { url } });

/**
 * Webhooks across real processes: the api, the orchestrator (it relays the outbox and delivers) and the tool-runner,
 * each its own OS process. The orchestrator allows fewer URLs than the api did when it accepted the runs (an operator
 * narrowed AGENTLOOP_WEBHOOK_ALLOWED_URLS since): every attempt checks the URL again.
 */
describe('webhooks across processes', () => {
  let s: ProcessStack;
  let hooks: WebhookReceiver;
  let orchestratorEnv: Record<string, string>;
  beforeAll(async () => {
    hooks = await WebhookReceiver.start();
    const localhost = `http://localhost:${hooks.portNumber}/`;
    s = await ProcessStack.start(['api'], {
      script: () => ({ text: 'done' }),
      env: {
        AGENTLOOP_WEBHOOK_SECRETS: `tenant-a=${SECRET}`,
        AGENTLOOP_WEBHOOK_RETRY_BASE_MS: '50',
        AGENTLOOP_WEBHOOK_ALLOWED_URLS: `${hooks.origin},${localhost}`,
      },
    });
    orchestratorEnv = { AGENTLOOP_WEBHOOK_ALLOWED_URLS: hooks.origin };
    await s.spawn('orchestrator', orchestratorEnv);
    await s.spawn('tool-runner');
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
    await hooks?.down();
  });
  const deliveries = async (runId: string) =>
    (await s.a.request('GET', `/v1/runs/${runId}/webhooks`)).json.data as Array<Record<string, unknown>>;

  it('kill -9 of the process delivering, mid-delivery: delivered at least once, with the same webhook-id and body', async () => {
    let answered = false;
    hooks.answer = (r) => (r.path === '/crash' && !answered ? 'hang' : 200);
    const runId = await s.a.startRun(run(hooks.url('/crash')));
    await until('the first attempt to reach the receiver', () => hooks.of(runId).length === 1, 30_000);
    await s.kill('orchestrator', 'SIGKILL'); // while the receiver holds the request unanswered
    answered = true;
    await s.spawn('orchestrator#2', orchestratorEnv);
    await until(
      'delivered by the next process',
      async () => (await deliveries(runId))[0]?.status === 'delivered',
      40_000,
    );
    const got = hooks.of(runId);
    expect(got.length).toBeGreaterThanOrEqual(2);
    expect(new Set(got.map((r) => r.headers['webhook-id'])).size).toBe(1);
    expect(new Set(got.map((r) => r.body)).size).toBe(1);
    for (const r of got) expect(WebhookReceiver.verifies(r, SECRET)).toBe(true);
    expect(await deliveries(runId)).toEqual([
      expect.objectContaining({ type: 'run.completed', status: 'delivered', lastStatusCode: 200 }),
    ]);
  }, 90_000);

  it('checks the URL again at delivery: under AGENTLOOP_WEBHOOK_ALLOWED_URLS a loopback address is delivered to, a name outside it that resolves to loopback is refused', async () => {
    hooks.answer = () => 200;
    const allowed = await s.a.startRun(run(hooks.url('/allowed')));
    const refused = await s.a.startRun(run(`http://localhost:${hooks.portNumber}/refused`)); // accepted by the api's wider list
    await until(
      'both finished',
      async () => {
        const [a, r] = await Promise.all([deliveries(allowed), deliveries(refused)]);
        return a[0]?.status === 'delivered' && r[0]?.status === 'failed';
      },
      40_000,
    );
    expect(await deliveries(refused)).toEqual([
      expect.objectContaining({ status: 'failed', attempts: 1, lastStatusCode: null, nextAttemptAt: null }),
    ]);
    expect(hooks.receipts.filter((r) => r.path === '/refused')).toEqual([]);
    expect(hooks.of(allowed).map((r) => r.path)).toEqual(['/allowed']);
  }, 60_000);
});
