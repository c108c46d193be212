import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CRM_OPENAPI_DOC,
  startCrmApi,
  stepOf,
  stepResults,
  type CrmApi,
  type MockRequest,
  type ReplySpec,
} from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const TOKEN = 'crm-token-never-shown-1234';
const callThen =
  (name: string, args: object) =>
  (req: MockRequest): ReplySpec =>
    stepOf(req) === 0 ? { toolCalls: [{ name, args }] } : { text: `result: ${stepResults(req, 0)[0]}` };
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  lookup: callThen('crm__getCustomer', { customerId: 'c-1', expand: true }),
  note: callThen('crm__createNote', { customerId: 'c-7', body: { text: 'renewal call booked' } }),
  traversal: callThen('crm__getCustomer', { customerId: '../admin' }),
  missing: callThen('crm__getCustomer', { customerId: 'missing' }),
  echo: callThen('crm__getCustomer', { customerId: 'echo-auth' }),
  blocked: callThen('public__getCustomer', { customerId: 'c-1' }),
};
const body = (scenario: string, tools: string[]) => ({
  input: `[${scenario}] please`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools,
});
const toolResult = (messages: Array<{ role: string; content?: string | null }>) =>
  JSON.parse(messages.find((m) => m.role === 'tool')!.content!) as Record<string, any>;

describe('OpenAPI tools through the product (SPEC §6)', () => {
  let api: CrmApi;
  let s: InProcessStack;
  beforeAll(async () => {
    api = await startCrmApi();
    const crm = {
      name: 'crm',
      spec: CRM_OPENAPI_DOC,
      baseUrl: api.baseUrl,
      headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' },
      operations: ['getCustomer', 'createNote'],
      allowPrivate: true,
    };
    const entries = [
      crm,
      { ...crm, name: 'public', operations: ['getCustomer'], allowPrivate: false },
      { ...crm, name: 'nokey', headers: { Authorization: 'Bearer ${env:AGENTLOOP_TEST_UNSET_CRM_TOKEN}' } },
    ];
    s = await InProcessStack.start({
      script: byScenario(scenarios, 'lookup'),
      env: { AGENTLOOP_OPENAPI_TOOLS: JSON.stringify(entries), CRM_TOKEN: TOKEN },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await api?.close();
  });

  it('the catalog lists each operation as <name>__<operationId> with its schema and side effect; an entry naming an unset variable is not there', async () => {
    const r = await s.a.request('GET', '/v1/tools');
    expect(r.status).toBe(200);
    const tools = (r.json as { data: Array<{ name: string; sideEffect: string; parameters: Record<string, any> }> })
      .data;
    const ours = tools
      .filter((t) => t.name.includes('__'))
      .map((t) => t.name)
      .sort();
    expect(ours).toEqual(['crm__createNote', 'crm__getCustomer', 'public__getCustomer']);
    expect(tools.find((t) => t.name === 'crm__getCustomer')).toMatchObject({
      sideEffect: 'read',
      parameters: { required: ['customerId'], properties: { customerId: { type: 'string' } } },
    });
    expect(tools.find((t) => t.name === 'crm__createNote')).toMatchObject({
      sideEffect: 'external',
      parameters: { required: ['customerId', 'body'], properties: { body: { required: ['text'] } } },
    });
    expect(JSON.stringify(tools)).not.toContain(TOKEN);
  });

  it('a read operation runs at once: the server gets the request, its JSON answer is the tool result', async () => {
    const id = await s.a.startRun(body('lookup', ['crm__getCustomer']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(toolResult(messages)).toMatchObject({
      status: 200,
      body: { id: 'c-1', name: 'Customer c-1', expand: 'true' },
    });
    expect(api.requests.find((q) => q.url === '/api/customers/c-1?expand=true')?.headers.authorization).toBe(
      `Bearer ${TOKEN}`,
    );
  });

  it('an external operation parks the run for approval; approved, it is sent once with the call’s idempotency key', async () => {
    const id = await s.a.startRun(body('note', ['crm__createNote']));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending.map((p) => [p.name, p.pauseType])).toEqual([['crm__createNote', 'awaiting_approval']]);
    expect(api.requests.filter((q) => q.method === 'POST')).toEqual([]);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect(r.status, r.text).toBe(202);
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(toolResult(messages)).toMatchObject({
      status: 201,
      body: { customerId: 'c-7', text: 'renewal call booked' },
    });
    const posts = api.requests.filter((q) => q.method === 'POST');
    expect(posts).toHaveLength(1);
    expect(posts[0]).toMatchObject({
      url: '/api/customers/c-7/notes',
      body: '{"text":"renewal call booked"}',
      headers: { 'idempotency-key': `${id}:${paused.pending[0]!.callId}` },
    });
  });

  it('a path traversal in a path parameter is encoded into its segment: the server never sees another path', async () => {
    const id = await s.a.startRun(body('traversal', ['crm__getCustomer']));
    const { messages } = await finishedRun(s.a, id);
    expect(toolResult(messages)).toMatchObject({ status: 200, body: { id: '../admin' } });
    expect(api.requests.some((q) => q.url === '/api/customers/..%2Fadmin')).toBe(true);
    expect(api.requests.some((q) => q.url.startsWith('/api/admin'))).toBe(false);
  });

  it('a non-2xx answer is a tool_error the model reads, naming the status; the run goes on', async () => {
    const id = await s.a.startRun(body('missing', ['crm__getCustomer']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(toolResult(messages)).toMatchObject({
      ok: false,
      error: { code: 'tool_error', retryable: false, message: 'HTTP 404: {"error":"no customer missing"}' },
    });
  });

  it('without allowPrivate the entry’s loopback base URL is refused: blocked_url, no request', async () => {
    const before = api.requests.length;
    const id = await s.a.startRun(body('blocked', ['public__getCustomer']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(toolResult(messages)).toMatchObject({ ok: false, error: { code: 'blocked_url' } });
    expect(api.requests.length).toBe(before);
  });

  it('the header secret never reaches the transcript or the events, even when the server echoes it', async () => {
    const id = await s.a.startRun(body('echo', ['crm__getCustomer']));
    const { messages, events } = await finishedRun(s.a, id);
    expect(toolResult(messages)).toMatchObject({ body: { authorization: 'Bearer [redacted]' } });
    expect(JSON.stringify(messages) + JSON.stringify(events)).not.toContain(TOKEN);
    const metrics = await (await fetch(s.proc.metricsUrl)).text();
    expect(metrics).toContain('agentloop_tool_calls_total{tool="crm__getCustomer"');
    expect(metrics).not.toContain(TOKEN);
  });
});

describe('OpenAPI tools on a pool of their own, each role its own process', () => {
  let api: CrmApi;
  let s: ProcessStack;
  afterAll(async () => {
    await s?.stop();
    await api?.close();
  });

  it('only the tool-runners of the entry’s pool load its document and serve its tools', async () => {
    api = await startCrmApi();
    const entry = {
      name: 'crm',
      spec: CRM_OPENAPI_DOC,
      baseUrl: api.baseUrl,
      headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' },
      operations: ['getCustomer'],
      allowPrivate: true,
      pool: 'crm',
    };
    s = await ProcessStack.start(['api', 'orchestrator'], {
      script: byScenario(scenarios, 'lookup'),
      env: { AGENTLOOP_OPENAPI_TOOLS: JSON.stringify([entry]) },
    });
    // the default pool's runner has no CRM_TOKEN: were it to start the entry, it would log that it could not
    await s.spawn('tool-runner#default', { LOG_LEVEL: 'info' }, ['--pools', 'default']);
    await s.spawn('tool-runner#crm', { LOG_LEVEL: 'info', CRM_TOKEN: TOKEN }, ['--pools', 'crm']);
    const id = await s.a.startRun(body('lookup', ['crm__getCustomer']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(toolResult(messages)).toMatchObject({ status: 200, body: { id: 'c-1' } });
    expect(api.requests.find((q) => q.url === '/api/customers/c-1?expand=true')?.headers.authorization).toBe(
      `Bearer ${TOKEN}`,
    );
    const said = (name: string) => s.procs.get(name)!.output.filter((l) => l.includes('OpenAPI tools'));
    expect(said('tool-runner#default')).toEqual([]);
    expect(said('tool-runner#crm').map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
      expect.objectContaining({ msg: 'OpenAPI tools ready', openapiTools: 'crm', tools: ['crm__getCustomer'] }),
    ]);
    for (const p of s.procs.values()) expect(p.output.join('\n')).not.toContain(TOKEN);
  });
});
