import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { EVENT_TYPES } from '@agentloop/protocol';
import { stepOf, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

type Doc = {
  paths: Record<
    string,
    Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>
  >;
  components: { schemas: Record<string, unknown> };
};

/**
 * The OpenAPI document is the API's contract for clients in any language: every endpoint's every status has its
 * schema, every event type its data schema, and what the API answers validates against them (the same protocol
 * schemas `@agentloop/client` checks answers with).
 */
describe('the OpenAPI document against the running API', () => {
  let s: InProcessStack;
  let doc: Doc;
  const script = (req: MockRequest): ReplySpec =>
    stepOf(req) === 0 ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] } : { text: 'sent' };
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    doc = (await s.a.request('GET', '/v1/openapi.json')).json as Doc;
  }, 30_000);
  afterAll(() => s?.stop());

  it('gives every JSON answer of every endpoint a schema, and every event type its data schema', () => {
    const missing: string[] = [];
    for (const [path, methods] of Object.entries(doc.paths))
      for (const [method, op] of Object.entries(methods))
        for (const [status, res] of Object.entries(op.responses))
          if (status !== '204' && path !== '/v1/openapi.json' && !res.content)
            missing.push(`${method.toUpperCase()} ${path} ${status}`);
    expect(missing).toEqual([]);
    for (const t of EVENT_TYPES) expect(doc.components.schemas, t).toHaveProperty(`Event_${t.replace('.', '_')}`);
  });

  it('what the API answers validates against the document', async () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addSchema({ $id: 'doc', components: doc.components });
    const check = (name: string, value: unknown) => {
      const validate = ajv.getSchema(`doc#/components/schemas/${name}`)!;
      expect(validate(value), `${name}: ${JSON.stringify(validate.errors?.slice(0, 3))}`).toBe(true);
    };
    const created = await s.a.request('POST', '/v1/runs', {
      input: 'mail',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['send_email'],
      threadId: 'contract',
    });
    check('CreateRunResponse', created.json);
    const id = (created.json as { id: string }).id;
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    check('RunSnapshot', paused);
    check('RunListPage', (await s.a.request('GET', '/v1/runs?limit=5')).json);
    check('ToolCatalog', (await s.a.request('GET', '/v1/tools')).json);
    check(
      'DecisionResponse',
      (
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
        })
      ).json,
    );
    await s.a.waitTerminal(id);
    check('Thread', (await s.a.request('GET', '/v1/threads/contract')).json);
    check('WebhookDeliveries', (await s.a.request('GET', `/v1/runs/${id}/webhooks`)).json);
    for (const e of (await s.a.events(id)).events) check(`Event_${e.type.replace('.', '_')}`, e);
    const other = (
      (
        await s.a.request('POST', '/v1/runs', {
          input: 'x',
          model: { provider: 'openai', name: 'gpt-4o-mini' },
          tools: ['send_email'],
        })
      ).json as { id: string }
    ).id;
    await s.a.waitFor(other, (r) => r.status === 'paused');
    check('CancelRunResponse', (await s.a.request('POST', `/v1/runs/${other}/cancel`)).json);
    check('Error', (await s.a.request('GET', '/v1/runs/nope')).json);
  });
});
