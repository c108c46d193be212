import { describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { WebhookVerificationError, webhooks } from './webhook-verify.js';

const SECRET = `whsec_${btoa('a tenant secret of 32 bytes!!!!!')}`;
const OTHER_SECRET = `whsec_${btoa('another tenant secret, 32 bytes!')}`;
const snapshot = {
  id: 'run_1',
  status: 'paused',
  iteration: 1,
  createdAt: '2025-01-01T00:00:00.000Z',
  updatedAt: '2025-01-01T00:00:01.000Z',
  model: { provider: 'openai', name: 'gpt-4o-mini', params: {} },
  mode: 'interactive',
  stopReason: null,
  output: null,
  error: null,
  pending: [{ callId: 'call_1', name: 'send_email', arguments: { to: 'a@b.c' }, pauseType: 'awaiting_approval' }],
  usage: {
    promptTokens: 1,
    completionTokens: 2,
    reasoningTokens: 0,
    cachedTokens: 0,
    totalTokens: 3,
    costUsd: 0,
    llmCalls: 1,
    toolCalls: 0,
  },
  metadata: {},
};
const body = JSON.stringify({
  type: 'run.paused',
  timestamp: '2025-01-01T00:00:01.000Z',
  data: {
    runId: 'run_1',
    event: {
      seq: 5,
      runId: 'run_1',
      type: 'run.paused',
      at: '2025-01-01T00:00:01.000Z',
      data: { pending: snapshot.pending, expiresAt: '2025-01-02T00:00:01.000Z' },
    },
    run: snapshot,
  },
});

/** A delivery signed by the reference implementation of Standard Webhooks, as the server's signature must be. */
function signed(payload: string, at = new Date(), secret = SECRET, id = 'msg_1') {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': new Webhook(secret).sign(id, new Date(timestamp * 1000), payload),
  };
}
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e,
  );

describe('webhooks.verify: a receiver checks a Standard Webhooks delivery', () => {
  it('accepts a delivery signed by the standardwebhooks package, from Node headers, fetch Headers, text or bytes', async () => {
    const headers = signed(body);
    expect(await webhooks.verify(SECRET, headers, body)).toMatchObject({
      type: 'run.paused',
      data: { runId: 'run_1', event: { seq: 5 }, run: { status: 'paused' } },
    });
    expect(
      (await webhooks.verify(SECRET, new Headers(headers), new TextEncoder().encode(body))).data.run.pending,
    ).toHaveLength(1);
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    expect((await webhooks.verify(SECRET, upper, body)).type).toBe('run.paused');
    // and the package accepts what it signed, so both ends agree on the scheme
    expect(new Webhook(SECRET).verify(body, headers)).toMatchObject({ type: 'run.paused' });
  });

  it('accepts any one matching signature of several (a secret rotation), and a body that is not ASCII', async () => {
    const text = body.replaceAll('a@b.c', 'zoë@例え.jp 🙂');
    const headers = signed(text);
    const rotated = {
      ...headers,
      'webhook-signature': `${signed(text, new Date(), OTHER_SECRET)['webhook-signature']} v2,abc ${headers['webhook-signature']}`,
    };
    expect((await webhooks.verify(SECRET, rotated, text)).data.run.pending[0]!.arguments).toEqual({
      to: 'zoë@例え.jp 🙂',
    });
  });

  it('refuses a tampered body, id or timestamp, another secret, and a signature of another scheme version', async () => {
    const headers = signed(body);
    const tampered = body.replace('"seq":5', '"seq":6');
    for (const [h, b] of [
      [headers, tampered],
      [{ ...headers, 'webhook-id': 'msg_2' }, body],
      [{ ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }, body],
      [signed(body, new Date(), OTHER_SECRET), body],
      [{ ...headers, 'webhook-signature': headers['webhook-signature'].replace('v1,', 'v2,') }, body],
      [{ ...headers, 'webhook-signature': 'v1,!!!not base64' }, body],
    ] as const) {
      const e = await refusal(webhooks.verify(SECRET, h, b));
      expect(e).toBeInstanceOf(WebhookVerificationError);
      expect((e as Error).message).toMatch(/no webhook-signature matches/);
    }
    // the reference implementation refuses the tampered body too
    expect(() => new Webhook(SECRET).verify(tampered, headers)).toThrow();
  });

  it('refuses a genuine delivery replayed after the tolerance, or stamped too far ahead', async () => {
    const old = signed(body, new Date(Date.now() - 301_000));
    expect(await refusal(webhooks.verify(SECRET, old, body))).toMatchObject({
      name: 'WebhookVerificationError',
      message: expect.stringMatching(/s old \(tolerance 300 s\)/),
    });
    expect(await refusal(webhooks.verify(SECRET, signed(body, new Date(Date.now() + 301_000)), body))).toMatchObject({
      message: expect.stringMatching(/in the future/),
    });
    // within a tolerance of one's own, or with a clock of one's own, the same delivery passes
    expect((await webhooks.verify(SECRET, old, body, { toleranceS: 600 })).type).toBe('run.paused');
    expect((await webhooks.verify(SECRET, old, body, { now: () => Date.now() - 301_000 })).type).toBe('run.paused');
  });

  it('refuses missing headers, a timestamp that is not unix seconds, and a signed body that is no agentloop webhook', async () => {
    const headers = signed(body);
    const { 'webhook-signature': _, ...unsigned } = headers;
    expect(await refusal(webhooks.verify(SECRET, unsigned, body))).toMatchObject({
      message: expect.stringMatching(/missing/),
    });
    expect(await refusal(webhooks.verify(SECRET, { ...headers, 'webhook-timestamp': '1e9' }, body))).toMatchObject({
      message: expect.stringMatching(/unix seconds/),
    });
    const other = JSON.stringify({ hello: 'world' });
    expect(await refusal(webhooks.verify(SECRET, signed(other), other))).toMatchObject({
      name: 'WebhookVerificationError',
      message: expect.stringMatching(/not an agentloop webhook/),
    });
  });

  it('says a malformed secret is a configuration error, not a forged request', async () => {
    const e = await refusal(webhooks.verify('whsec_***', signed(body), body));
    expect(e).toBeInstanceOf(TypeError);
  });
});
