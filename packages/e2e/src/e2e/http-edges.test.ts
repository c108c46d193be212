import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario } from '../test-support/helpers.js';

const hasToolResult = (req: MockRequest) => req.messages.some((m) => m.role === 'tool');
const script = byScenario(
  {
    email: (req): ReplySpec =>
      hasToolResult(req)
        ? { text: 'sent' }
        : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'hi' } }] },
    client: (req): ReplySpec =>
      hasToolResult(req) ? { text: 'picked' } : { toolCalls: [{ name: 'pick_file', args: {} }] },
    plain: (): ReplySpec => ({ text: 'ok' }),
  },
  'plain',
);
const body = (scenario: string, extra: Record<string, unknown> = {}) => ({
  input: `[${scenario}] go`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['send_email'],
  clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
  ...extra,
});

describe('HTTP edges', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script,
      env: { AGENTLOOP_MODEL_PRICES: JSON.stringify({ 'openai/ft:my-finetune': { input: 1, output: 2 } }) },
    });
  }, 30_000);
  afterAll(() => s?.stop());

  const raw = (path: string, init: RequestInit & { headers?: Record<string, string> }) =>
    fetch(`${s.a.baseUrl}${path}`, { ...init, headers: { authorization: 'Bearer key-a', ...init.headers } });

  it('answers bodies it cannot decode with 400, never 500', async () => {
    const json = JSON.stringify(body('plain'));
    const cases: Array<Record<string, string>> = [
      { 'content-type': 'application/json', 'content-encoding': 'x-unknown' },
      { 'content-type': 'application/json', 'content-encoding': 'gzip' }, // not gzip at all
      { 'content-type': 'application/json; charset=x-bogus' },
      { 'content-type': 'application/json; charset=ebcdic-cp-zz' },
      { 'content-type': 'application/xml' },
      { 'content-type': 'multipart/form-data; boundary=x' },
    ];
    for (const headers of cases) {
      const r = await raw('/v1/runs', { method: 'POST', headers, body: json });
      const text = await r.text();
      expect([400, 415], `${JSON.stringify(headers)} → ${r.status} ${text}`).toContain(r.status);
      expect(JSON.parse(text).error.code).toBe('invalid_request');
    }
    const gz = await raw('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: gzipSync(json),
    });
    expect(gz.status).toBe(202); // a body it can decode is accepted
    const latin1 = await raw('/v1/runs', {
      method: 'POST',
      headers: { 'content-type': 'application/json; charset=iso-8859-1' },
      body: json,
    });
    expect(latin1.status).toBe(202);
  });

  it('answers decisions for another tenant’s run with 404 before any other check, leaking no tool name', async () => {
    const id = await s.b.startRun(body('email'));
    const paused = await s.b.waitFor(id, (r) => r.status === 'paused');
    const callId = paused.pending[0]!.callId;
    const missing = 'run_doesnotexist000000';
    const attempts: unknown[] = [
      { decisions: [{ callId, action: 'approve', arguments: { wrong: 1 } }] }, // an edit failing the schema
      { decisions: [{ callId, action: 'approve' }] },
      { decisions: [{ callId, action: 'submit_result', result: 1 }] },
      { decisions: [] },
      { nope: true },
      '{not json',
      '',
    ];
    for (const a of attempts) {
      const theirs = await s.a.request('POST', `/v1/runs/${id}/decisions`, a);
      const none = await s.a.request('POST', `/v1/runs/${missing}/decisions`, a);
      expect(theirs.status, `${JSON.stringify(a)} → ${theirs.text}`).toBe(404);
      expect(none.status).toBe(404);
      expect(theirs.text).not.toContain('send_email');
      expect(theirs.json.error.code).toBe(none.json.error.code);
    }
    expect((await s.b.getRun(id)).json.status).toBe('paused'); // nothing applied
    // its owner still gets the real answers
    expect(
      (
        await s.b.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId, action: 'approve', arguments: { wrong: 1 } }],
        })
      ).status,
    ).toBe(400);
    expect((await s.b.request('POST', `/v1/runs/${id}/decisions`, '{not json')).status).toBe(400);
  });

  it('a decision whose callId names one of the call’s stored fields is 409 (not pending), never 500; nothing is applied', async () => {
    const id = await s.a.startRun(body('client'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const callId = paused.pending[0]!.callId;
    for (const bad of [`${callId}:st`, `${callId}:dec`, `${callId}:out`, 'x'.repeat(100), 'a b', '']) {
      for (const d of [
        { callId: bad, action: 'submit_result', result: 1 },
        { callId: bad, action: 'approve', arguments: {} },
        { callId: bad, action: 'deny' },
      ]) {
        const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, { decisions: [d] });
        expect([400, 409], `${JSON.stringify(d)} → ${r.status} ${r.text}`).toContain(r.status);
        if (bad) expect(r.status).toBe(409);
      }
      // another tenant still gets 404 first
      if (bad)
        expect(
          (await s.b.request('POST', `/v1/runs/${id}/decisions`, { decisions: [{ callId: bad, action: 'deny' }] }))
            .status,
        ).toBe(404);
    }
    expect((await s.a.getRun(id)).json).toMatchObject({ status: 'paused', pending: [{ callId }] });
    expect(
      (
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId, action: 'submit_result', result: { ok: true } }],
        })
      ).status,
    ).toBe(202);
    expect((await s.a.waitTerminal(id)).status).toBe('completed');
  });

  it('caps a submitted client result like any tool result', async () => {
    const id = await s.a.startRun(body('client', { context: { toolResultMaxTokens: 200 } }));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const big = 'x'.repeat(200_000);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'submit_result', result: { big } }],
    });
    expect(r.status).toBe(202);
    await s.a.waitTerminal(id);
    const tool = (await s.a.getRun(id, 'messages')).json.messages!.find((m) => m.role === 'tool')!;
    expect(tool.content!.length).toBeLessThan(2_000);
    expect(tool.content).toMatch(/cut from this tool result/);
    // the full result stays in the call's record
    const rec = await s.a.request('GET', `/v1/runs/${id}/calls/${paused.pending[0]!.callId}`);
    expect(rec.json.result.big).toHaveLength(200_000);
    for (const field of [':out', ':st', ':dec'])
      expect(
        (await s.a.request('GET', `/v1/runs/${id}/calls/${paused.pending[0]!.callId}${encodeURIComponent(field)}`))
          .status,
      ).toBe(404);
  });

  it('refuses maxCostUsd with a model that has no price, in model or any fallback; AGENTLOOP_MODEL_PRICES prices one', async () => {
    const limits = { maxCostUsd: 1 };
    const unpriced = await s.a.createRun(
      body('plain', { limits, model: { provider: 'openai', name: 'my-own-model' } }),
    );
    expect(unpriced.status).toBe(400);
    expect(unpriced.json.error.details.map((d: { path: string[] }) => d.path.join('.'))).toEqual(['model.name']);
    const fallback = await s.a.createRun(
      body('plain', {
        limits,
        fallbacks: [
          { provider: 'deepseek', name: 'deepseek-chat' },
          { provider: 'google', name: 'gemini-9' },
        ],
      }),
    );
    expect(fallback.status).toBe(400);
    expect(fallback.json.error.details.map((d: { path: string[] }) => d.path.join('.'))).toEqual(['fallbacks.1.name']);
    expect(
      (await s.a.createRun(body('plain', { limits, model: { provider: 'openai', name: 'ft:my-finetune:v2' } }))).status,
    ).toBe(202);
    expect((await s.a.createRun(body('plain', { model: { provider: 'openai', name: 'my-own-model' } }))).status).toBe(
      202,
    ); // no cost budget: fine
  });

  it('refuses notify with 400 on a deployment without AGENTLOOP_WEBHOOK_SECRETS (never ignores it)', async () => {
    const r = await s.a.createRun(body('plain', { notify: { url: 'https://backend.example.com/hooks/agentloop' } }));
    expect(r.status).toBe(400);
    expect(r.json.error.code).toBe('invalid_request');
    expect(r.json.error.details).toEqual([
      expect.objectContaining({
        path: ['notify'],
        message: 'tenant tenant-a has no webhook signing secret (AGENTLOOP_WEBHOOK_SECRETS): it cannot use notify',
      }),
    ]);
  });

  it('tells bodies apart by every key, `__proto__` included (idempotency)', async () => {
    const key = { 'idempotency-key': `proto-${Date.now()}` };
    const bodyWith = (v: number) =>
      `{"input":"[plain] i","model":{"provider":"openai","name":"gpt-4o-mini"},"metadata":{"__proto__":{"v":${v}}}}`;
    const first = await s.a.request('POST', '/v1/runs', bodyWith(0), key);
    expect(first.status).toBe(202);
    expect((await s.a.request('POST', '/v1/runs', bodyWith(0), key)).status).toBe(200);
    expect((await s.a.request('POST', '/v1/runs', bodyWith(1), key)).status).toBe(422);
  });

  it('answers 204 for events at or past the terminal event, so an EventSource stops reconnecting', async () => {
    const id = await s.a.startRun(body('plain'));
    await s.a.waitTerminal(id);
    const all = await s.a.events(id);
    const last = all.ids[all.ids.length - 1]!;
    expect(all.status).toBe(200);
    expect((await s.a.events(id, { lastEventId: last })).status).toBe(204);
    expect((await s.a.events(id, { after: last + 5 })).status).toBe(204);
    const before = await s.a.events(id, { after: last - 1 });
    expect(before.status).toBe(200);
    expect(before.events.map((e) => e.seq)).toEqual([last]);
    expect((await s.a.events(id, { lastEventId: -1 as number })).status).toBe(400);
  });
});
