import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CRM_OPENAPI_DOC, startCrmApi, type CrmApi } from '@agentloop/testing';
import { executeToolCall } from '../execute-tool-call.js';
import { ToolRegistry } from '../registry.js';
import { parseOpenApiTools } from './config.js';
import { startOpenApiTools } from './openapi-tools.js';

const logged: Array<{ level: string; fields: object; msg: string }> = [];
const logger = {
  info: (fields: object, msg: string) => logged.push({ level: 'info', fields, msg }),
  error: (fields: object, msg: string) => logged.push({ level: 'error', fields, msg }),
};
const ctx = { runId: 'r1', callId: 'c1', tenantId: 't', idempotencyKey: 'r1:c1', logger: console };
const opts = { maxResultBytes: 1_000_000, maxResultTokens: 10_000 };
const OPERATIONS = ['getCustomer', 'searchCustomers', 'customerSummary', 'createNote'];

async function registryOf(entries: unknown[], environment: Record<string, string | undefined> = {}) {
  const registry = new ToolRegistry([]);
  for (const d of await startOpenApiTools(parseOpenApiTools(JSON.stringify(entries)), () => true, {
    logger,
    environment,
  }))
    registry.add(d);
  const call = (name: string, args: object) =>
    executeToolCall(registry.get(name), name, JSON.stringify(args), ctx, new AbortController().signal, opts);
  return { registry, call };
}

describe('OpenAPI tools against a real HTTP server (SPEC §6)', () => {
  let api: CrmApi;
  let t: Awaited<ReturnType<typeof registryOf>>;
  beforeAll(async () => {
    api = await startCrmApi();
    const crm = {
      name: 'crm',
      spec: CRM_OPENAPI_DOC,
      baseUrl: api.baseUrl,
      headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' },
      operations: OPERATIONS,
      allowPrivate: true,
      timeoutMs: 5_000,
    };
    t = await registryOf([crm, { ...crm, name: 'public', operations: ['getCustomer'], allowPrivate: false }], {
      CRM_TOKEN: 'tok-secret-42',
    });
  });
  afterAll(() => api.close());

  it('catalog: <name>__<operationId>, parameters and body as one schema ($refs resolved), side effects by method', () => {
    expect(
      t.registry
        .all()
        .map((x) => x.entry.name)
        .sort(),
    ).toEqual([
      'crm__createNote',
      'crm__customerSummary',
      'crm__getCustomer',
      'crm__searchCustomers',
      'public__getCustomer',
    ]);
    const get = t.registry.get('crm__getCustomer')!.entry;
    expect(get).toMatchObject({
      sideEffect: 'read',
      retry: 'safe',
      pool: 'default',
      timeoutMs: 5_000,
      description: 'Get one customer\n\nLooks a customer up by id.',
    });
    expect(get.parameters).toEqual({
      type: 'object',
      properties: {
        customerId: { type: 'string', minLength: 1, maxLength: 200, description: "The customer's id" },
        expand: { type: 'boolean' },
        'X-Trace-Id': { type: 'string' },
      },
      required: ['customerId'],
      additionalProperties: false,
    }); // the Authorization header parameter is the entry's, not the model's
    const note = t.registry.get('crm__createNote')!.entry;
    expect(note).toMatchObject({ sideEffect: 'external', retry: 'never' });
    expect(note.parameters).toMatchObject({
      properties: {
        customerId: { type: 'string' },
        body: {
          type: 'object',
          required: ['text'],
          properties: { text: { type: 'string', minLength: 1 }, pinned: { type: ['boolean', 'null'] } },
        },
      },
      required: ['customerId', 'body'],
    });
    expect(t.registry.get('crm__searchCustomers')!.entry.parameters).toMatchObject({
      properties: { tag: { type: 'array', items: { type: 'string' } }, limit: { type: 'integer', maximum: 50 } },
    });
    expect(JSON.stringify(t.registry.all().map((x) => x.entry))).not.toContain('tok-secret-42');
  });

  it('sideEffects from the entry override the method default', async () => {
    const { registry } = await registryOf([
      {
        name: 'crm',
        spec: CRM_OPENAPI_DOC,
        baseUrl: api.baseUrl,
        operations: ['createNote', 'getCustomer'],
        sideEffects: { createNote: 'reversible', getCustomer: 'critical' },
      },
    ]);
    expect(registry.get('crm__createNote')!.entry).toMatchObject({ sideEffect: 'reversible', retry: 'never' });
    expect(registry.get('crm__getCustomer')!.entry).toMatchObject({ sideEffect: 'critical', retry: 'safe' });
  });

  it('calls: path, query, header and body parameters reach the server; JSON parsed, text as text', async () => {
    expect(await t.call('crm__getCustomer', { customerId: 'c-1', expand: true, 'X-Trace-Id': 'tr-9' })).toMatchObject({
      status: 'completed',
      result: { status: 200, body: { id: 'c-1', name: 'Customer c-1', expand: 'true', trace: 'tr-9' } },
    });
    const sent = api.requests.at(-1)!;
    expect(sent).toMatchObject({ method: 'GET', url: '/api/customers/c-1?expand=true' });
    expect(sent.headers.authorization).toBe('Bearer tok-secret-42');
    expect(sent.headers['idempotency-key']).toBeUndefined();
    expect(await t.call('crm__searchCustomers', { tag: ['vip', 'a&b'] })).toMatchObject({
      result: { body: { tags: ['vip', 'a&b'], limit: 10 } },
    }); // schema default filled in
    expect(await t.call('crm__customerSummary', { customerId: 'c-2' })).toMatchObject({
      result: { status: 200, body: 'c-2: a good customer' },
    });
    expect(
      await t.call('crm__createNote', { customerId: 'c-1', body: { text: 'called', pinned: null } }),
    ).toMatchObject({
      status: 'completed',
      result: { status: 201, body: { id: 7, customerId: 'c-1', text: 'called', pinned: null } },
    });
    const post = api.requests.at(-1)!;
    expect(post).toMatchObject({
      method: 'POST',
      url: '/api/customers/c-1/notes',
      body: '{"text":"called","pinned":null}',
    });
    expect(post.headers).toMatchObject({ 'content-type': 'application/json', 'idempotency-key': 'r1:c1' });
  });

  it('arguments are checked against the schema before any request', async () => {
    const before = api.requests.length;
    expect(await t.call('crm__createNote', { customerId: 'c-1', body: {} })).toMatchObject({
      status: 'error',
      error: { code: 'invalid_arguments' },
    });
    expect(await t.call('crm__getCustomer', { customerId: 'c-1', admin: true })).toMatchObject({
      status: 'error',
      error: { code: 'invalid_arguments' },
    });
    expect(api.requests.length).toBe(before);
  });

  it('a hostile path parameter is encoded into its segment: it never reaches another path', async () => {
    const r = await t.call('crm__getCustomer', { customerId: '../admin' });
    expect(r).toMatchObject({ status: 'completed', result: { body: { id: '../admin' } } });
    expect(api.requests.at(-1)!.url).toBe('/api/customers/..%2Fadmin');
    expect(await t.call('crm__getCustomer', { customerId: '..' })).toMatchObject({
      status: 'error',
      error: { code: 'invalid_arguments' },
    });
    expect(api.requests.some((q) => q.url.startsWith('/api/admin'))).toBe(false);
  });

  it('a non-2xx answer is a tool_error naming the status: 4xx not retryable, 5xx retryable; secrets redacted', async () => {
    const missing = await t.call('crm__getCustomer', { customerId: 'missing' });
    expect(missing).toMatchObject({ status: 'error', error: { code: 'tool_error', retryable: false } });
    expect(missing.error!.message).toBe('HTTP 404: {"error":"no customer missing"}');
    expect(await t.call('crm__getCustomer', { customerId: 'flaky' })).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', retryable: true, message: 'HTTP 503: {"error":"try again later"}' },
    });
    const echoed = await t.call('crm__getCustomer', { customerId: 'echo-auth' });
    expect(echoed.result).toEqual({ status: 200, body: { authorization: 'Bearer [redacted]' } });
  });

  it('the SSRF guard: an entry without allowPrivate is refused its loopback base URL (blocked_url), no request made', async () => {
    const before = api.requests.length;
    const r = await t.call('public__getCustomer', { customerId: 'c-1' });
    expect(r).toMatchObject({ status: 'error', error: { code: 'blocked_url' } });
    expect(r.error!.message).toMatch(/refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1/);
    expect(api.requests.length).toBe(before);
  });

  it('allowPrivate reaches the entry’s own host only: redirects re-checked, metadata addresses never', async () => {
    expect(await t.call('crm__getCustomer', { customerId: 'redirect-home' })).toMatchObject({
      status: 'completed',
      result: { body: { authorization: 'Bearer [redacted]' } },
    });
    expect(await t.call('crm__getCustomer', { customerId: 'redirect-away' })).toMatchObject({
      status: 'error',
      error: { code: 'blocked_url', message: expect.stringMatching(/127\.0\.0\.2/) },
    });
    const { call } = await registryOf([
      {
        name: 'meta',
        spec: CRM_OPENAPI_DOC,
        baseUrl: 'http://169.254.169.254/latest',
        operations: ['getCustomer'],
        allowPrivate: true,
      },
    ]);
    expect(await call('meta__getCustomer', { customerId: 'c-1' })).toMatchObject({
      status: 'error',
      error: { code: 'blocked_url' },
    });
  });

  it('a server slower than the entry’s timeoutMs: the call is answered timeout and its request aborted', async () => {
    const { call } = await registryOf([
      {
        name: 'slow',
        spec: CRM_OPENAPI_DOC,
        baseUrl: api.baseUrl,
        operations: ['getCustomer'],
        allowPrivate: true,
        timeoutMs: 300,
      },
    ]);
    expect(await call('slow__getCustomer', { customerId: 'slow' })).toMatchObject({
      status: 'error',
      error: { code: 'timeout', message: 'the tool did not finish within 300 ms' },
    });
  });

  it('an unreachable server is a retryable tool_error', async () => {
    const gone = await startCrmApi();
    await gone.close();
    const { call } = await registryOf([
      { name: 'gone', spec: CRM_OPENAPI_DOC, baseUrl: gone.baseUrl, operations: ['getCustomer'], allowPrivate: true },
    ]);
    expect(await call('gone__getCustomer', { customerId: 'c-1' })).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', retryable: true, message: expect.stringMatching(/request failed: .*ECONNREFUSED/) },
    });
  });

  it('the document from a URL: on a loopback host only for an entry with allowPrivate', async () => {
    const remote = {
      name: 'remote',
      spec: `http://127.0.0.1:${api.port}/openapi.yaml`,
      baseUrl: api.baseUrl,
      operations: ['getCustomer'],
    };
    const { registry } = await registryOf([{ ...remote, allowPrivate: true }]);
    expect(registry.get('remote__getCustomer')!.entry.parameters).toMatchObject({ required: ['customerId'] });
    // a document from a URL that points its $refs at local files: they are not read
    const secretFile = path.join(mkdtempSync(path.join(tmpdir(), 'openapi-secret-')), 'secret.json');
    writeFileSync(secretFile, JSON.stringify({ type: 'string', description: 'local-secret-content' }));
    const hostile = http.createServer((_, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          openapi: '3.0.3',
          info: { title: 'x', version: '1' },
          paths: {
            '/a/{id}': {
              get: {
                operationId: 'peek',
                parameters: [{ name: 'id', in: 'path', required: true, schema: { $ref: `file://${secretFile}` } }],
                responses: { 200: { description: 'ok' } },
              },
            },
          },
        }),
      ),
    );
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', r));
    const hostileUrl = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}/openapi.json`;
    await expect(
      registryOf([{ ...remote, spec: hostileUrl, operations: ['peek'], allowPrivate: true }]),
    ).rejects.toThrow(/cannot be loaded/);
    hostile.close();
    await expect(registryOf([remote])).rejects.toThrow(
      /\[remote\]: the document .* cannot be loaded: .*\(a document on a private or internal host needs "allowPrivate": true\)/,
    );
  });
});

describe('OpenAPI tools at start', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'openapi-start-'));
  const start = (e: object, environment: Record<string, string | undefined> = {}) =>
    startOpenApiTools(
      parseOpenApiTools(
        JSON.stringify([
          {
            name: 'crm',
            spec: CRM_OPENAPI_DOC,
            baseUrl: 'https://crm.internal/api',
            operations: ['getCustomer'],
            ...e,
          },
        ]),
      ),
      () => true,
      { logger, environment },
    );

  it('an entry naming an unset variable is not started, and the log names the variable (never a value)', async () => {
    logged.length = 0;
    expect(
      await start(
        { headers: { Authorization: 'Bearer ${env:CRM_TOKEN}', 'X-Other': '${env:SET_ONE}' } },
        { SET_ONE: 'value-not-logged' },
      ),
    ).toEqual([]);
    expect(logged).toEqual([
      {
        level: 'error',
        fields: { openapiTools: 'crm', missing: ['CRM_TOKEN'] },
        msg: 'OpenAPI tools not started: their headers name environment variables that are not set',
      },
    ]);
    expect(JSON.stringify(logged)).not.toContain('value-not-logged');
  });

  it('only the entries of the pools this runner serves', async () => {
    expect(
      await startOpenApiTools(
        parseOpenApiTools(
          JSON.stringify([
            { name: 'crm', spec: '/nonexistent.yaml', baseUrl: 'https://crm.internal', operations: ['x'], pool: 'crm' },
          ]),
        ),
        (p) => p === 'default',
        { logger },
      ),
    ).toEqual([]);
  });

  it('a bad document stops the start with a message naming the entry and what is wrong', async () => {
    await expect(start({ spec: path.join(dir, 'nope.yaml') })).rejects.toThrow(
      /AGENTLOOP_OPENAPI_TOOLS \[crm\]: the document .*nope.yaml cannot be loaded/,
    );
    const invalid = path.join(dir, 'invalid.yaml');
    writeFileSync(invalid, 'openapi: 3.0.3\ninfo: { title: x }\npaths: { /a: { get: { operationId: a } } }\n');
    await expect(start({ spec: invalid })).rejects.toThrow(
      /AGENTLOOP_OPENAPI_TOOLS \[crm\]: the document .*invalid.yaml cannot be loaded: .*version/,
    );
    const swagger = path.join(dir, 'swagger.json');
    writeFileSync(swagger, JSON.stringify({ swagger: '2.0', info: { title: 'x', version: '1' }, paths: {} }));
    await expect(start({ spec: swagger })).rejects.toThrow(/is not an OpenAPI 3.x document \(Swagger 2.0\)/);
    const dangling = path.join(dir, 'dangling.yaml');
    writeFileSync(
      dangling,
      readFileSync(CRM_OPENAPI_DOC, 'utf8').replace("'#/components/schemas/NewNote'", "'#/components/schemas/Nothing'"),
    );
    await expect(start({ spec: dangling, operations: ['createNote'] })).rejects.toThrow(
      /\[crm\]: the document .* cannot be loaded: .*Nothing/,
    );
    await expect(start({ operations: ['getCustomer', 'getInvoice'] })).rejects.toThrow(
      /has no operation 'getInvoice' \(its operationIds: searchCustomers, getCustomer/,
    );
  });
});

describe('OpenAPI tools: secrets echoed by a server', () => {
  const SECRET = 'tok/SECRET+abc/123';
  const CUT = 1_000_000;
  let server: http.Server;
  let call: Awaited<ReturnType<typeof registryOf>>['call'];
  let registry: ToolRegistry;
  beforeAll(async () => {
    // an API that echoes the credential it got, as PHP's json_encode does ("/" escaped), or every character \u-escaped,
    // or where its 1 MB cut falls
    server = http.createServer((req, res) => {
      const auth = req.headers.authorization ?? '';
      res.setHeader('content-type', 'application/json');
      if (req.url === '/echo/slashes') return res.end(JSON.stringify({ seen: auth, [auth]: 1 }).replace(/\//g, '\\/'));
      if (req.url === '/echo/unicode')
        return res.end(
          `{"seen":"${[...auth].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join('')}"}`,
        );
      if (req.url === '/echo/error')
        return res.writeHead(400).end(JSON.stringify({ error: `bad ${auth}` }).replace(/\//g, '\\/'));
      res.end(`{"pad":"${'x'.repeat(CUT - 8 - 'Bearer '.length - 5)}${auth}"}`); // the secret starts 5 bytes before the cut
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const dir = mkdtempSync(path.join(tmpdir(), 'openapi-echo-'));
    const spec = path.join(dir, 'echo.json');
    writeFileSync(
      spec,
      JSON.stringify({
        openapi: '3.0.3',
        info: { title: 'echo', version: '1' },
        paths: {
          '/echo/{mode}': {
            get: {
              operationId: 'echo',
              parameters: [{ name: 'mode', in: 'path', required: true, schema: { type: 'string' } }],
              responses: { 200: { description: 'ok' } },
            },
          },
        },
      }),
    );
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    ({ call, registry } = await registryOf(
      [
        {
          name: 'crm',
          spec,
          baseUrl,
          headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' },
          operations: ['echo'],
          allowPrivate: true,
        },
      ],
      { CRM_TOKEN: SECRET },
    ));
  });
  afterAll(() => server.close());

  it('a JSON-escaped echo (\\/ or \\uXXXX), in a value or a key, is redacted after parsing', async () => {
    expect((await call('crm__echo', { mode: 'slashes' })).result).toEqual({
      status: 200,
      body: { seen: 'Bearer [redacted]', 'Bearer [redacted]': 1 },
    });
    expect((await call('crm__echo', { mode: 'unicode' })).result).toEqual({
      status: 200,
      body: { seen: 'Bearer [redacted]' },
    });
    const failed = await call('crm__echo', { mode: 'error' });
    expect(failed.error).toMatchObject({ code: 'tool_error', message: 'HTTP 400: {"error":"bad Bearer [redacted]"}' });
  });

  it('a credential where the 1 MB cut falls is redacted whole, not cut in two', async () => {
    // the tool's own answer: the per-result cap of a call would cut it much shorter
    const r = (await registry
      .get('crm__echo')!
      .def.execute({ mode: 'cut' }, { ...ctx, signal: new AbortController().signal })) as {
      body: string;
      truncated: boolean;
    };
    const body = r.body;
    expect(r.truncated).toBe(true);
    expect(body.endsWith('xxxxBearer [redacted]')).toBe(true);
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(CUT + 5);
    expect(body).not.toContain('tok/S');
  });
});

describe('OpenAPI tools: allowPrivate is for the baseUrl origin only', () => {
  it('a redirect to another port of the base host is blocked_url, and that service gets no request', async () => {
    const admin: string[] = [];
    const other = http.createServer((req, res) => (admin.push(req.url!), res.end('{"internal":"admin service"}')));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const api = http.createServer((_, res) =>
      res.writeHead(302, { location: `http://127.0.0.1:${(other.address() as AddressInfo).port}/admin/keys` }).end(),
    );
    await new Promise<void>((r) => api.listen(0, '127.0.0.1', r));
    const spec = path.join(mkdtempSync(path.join(tmpdir(), 'openapi-redirect-')), 'go.json');
    writeFileSync(
      spec,
      JSON.stringify({
        openapi: '3.0.3',
        info: { title: 't', version: '1' },
        paths: { '/go': { get: { operationId: 'go', responses: { 200: { description: 'ok' } } } } },
      }),
    );
    try {
      const { call } = await registryOf([
        {
          name: 'crm',
          spec,
          baseUrl: `http://127.0.0.1:${(api.address() as AddressInfo).port}`,
          operations: ['go'],
          allowPrivate: true,
        },
      ]);
      expect(await call('crm__go', {})).toMatchObject({
        status: 'error',
        error: {
          code: 'blocked_url',
          message: expect.stringMatching(/refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1/),
        },
      });
      expect(admin).toEqual([]);
    } finally {
      api.close();
      other.close();
    }
  });
});

describe('OpenAPI tools: the document from a URL under the SSRF guard', () => {
  const served: string[] = [];
  const docWithRef = (ref: string) =>
    JSON.stringify({
      openapi: '3.0.3',
      info: { title: 'x', version: '1' },
      paths: {
        '/a/{id}': {
          get: {
            operationId: 'peek',
            parameters: [{ name: 'id', in: 'path', required: true, schema: { $ref: ref } }],
            responses: { 200: { description: 'ok' } },
          },
        },
      },
    });
  const idSchema = JSON.stringify({ type: 'string', description: 'an id from a $ref' });
  let home: http.Server;
  let other: http.Server;
  let homeUrl: string;
  let otherUrl: string;
  beforeAll(async () => {
    // another service on the same host: the document's allowance does not reach it
    other = http.createServer(
      (req, res) => (
        served.push(`other ${req.url}`),
        res.writeHead(200, { 'content-type': 'application/json' }).end(idSchema)
      ),
    );
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    otherUrl = `http://127.0.0.1:${(other.address() as AddressInfo).port}`;
    home = http.createServer((req, res) => {
      served.push(`home ${req.url}`);
      const json = (body: string) => res.writeHead(200, { 'content-type': 'application/json' }).end(body);
      if (req.url === '/same.json') return json(docWithRef('/schemas/id.json'));
      if (req.url === '/schemas/id.json') return json(idSchema);
      if (req.url === '/other.json') return json(docWithRef(`${otherUrl}/schemas/id.json`));
      if (req.url === '/redirect.json') return json(docWithRef('/moved/id.json'));
      if (req.url === '/moved/id.json') return res.writeHead(302, { location: `${otherUrl}/schemas/id.json` }).end();
      if (req.url === '/metadata.json') return json(docWithRef('http://169.254.169.254/latest/meta-data/id.json'));
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => home.listen(0, '127.0.0.1', r));
    homeUrl = `http://127.0.0.1:${(home.address() as AddressInfo).port}`;
  });
  afterAll(() => (home.close(), other.close()));
  const entry = (doc: string) => ({
    name: 'remote',
    spec: `${homeUrl}/${doc}`,
    baseUrl: homeUrl,
    operations: ['peek'],
    allowPrivate: true,
  });

  it('with allowPrivate, a $ref to the spec URL’s own origin is read', async () => {
    const { registry } = await registryOf([entry('same.json')]);
    expect(registry.get('remote__peek')!.entry.parameters).toMatchObject({
      properties: { id: { type: 'string', description: 'an id from a $ref' } },
    });
  });

  it('a $ref to another port of the host, or a redirect there, stops the start; that service gets no request', async () => {
    await expect(registryOf([entry('other.json')])).rejects.toThrow(
      /\[remote\]: the document .* cannot be loaded: .*refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1/,
    );
    await expect(registryOf([entry('redirect.json')])).rejects.toThrow(
      /\[remote\]: the document .* cannot be loaded: .*refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1/,
    );
    expect(served.filter((s) => s.startsWith('other'))).toEqual([]);
  });

  it('a $ref to a metadata address stops the start, allowPrivate or not (refused before any connection)', async () => {
    await expect(registryOf([entry('metadata.json')])).rejects.toThrow(
      /\[remote\]: the document .* cannot be loaded: .*169\.254\.169\.254.*refused: 169\.254\.169\.254 resolves to 169\.254\.169\.254/,
    );
  });
});

describe('OpenAPI tools: the document URL refused', () => {
  it('a metadata address is refused without the allowPrivate hint (no allowance reaches it)', async () => {
    const start = registryOf([
      {
        name: 'meta',
        spec: 'http://169.254.169.254/latest/openapi.json',
        baseUrl: 'https://crm.example/api',
        operations: ['x'],
      },
    ]);
    await expect(start).rejects.toThrow(
      /\[meta\]: the document .* cannot be loaded: .*refused: 169\.254\.169\.254 resolves to 169\.254\.169\.254/,
    );
    await expect(start).rejects.not.toThrow(/allowPrivate/);
  });
});
