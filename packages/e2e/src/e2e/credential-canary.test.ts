import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUES } from '@agentloop/protocol';
import { ProcessStack } from '../test-support/stack.js';

/**
 * SPEC §2 Providers: no field of a request can make the engine send a request or a credential to a destination the
 * operator did not configure, or read an environment variable the operator did not list. The product runs with
 * recognisable secrets in its environment; a hostile tenant tries every field and spelling; nothing reaches the
 * trap server, and no secret shows up in any response, event, log line or metric.
 */
const CANARIES = {
  OPENAI_API_KEY: 'sk-CANARY1-openai-key',
  DEEPSEEK_API_KEY: 'sk-CANARY2-deepseek-key',
  GEMINI_API_KEY: 'CANARY3-gemini-key',
  CANARY_SECRET: 'CANARY5-plain-secret',
  AGENTLOOP_ADMIN_KEY: 'CANARY6-admin-key-0123456789',
  OPENAI_ORG_ID: 'org-CANARY7',
  OPENAI_CUSTOM_HEADERS: 'x-canary: CANARY8-header',
};
const TENANT_C_KEY = 'CANARY4-tenant-c-api-key';
const SECRETS = [...Object.values(CANARIES), TENANT_C_KEY];

describe('credential canary: a hostile tenant reaches no secret and no unlisted destination', () => {
  let stack: ProcessStack;
  let trap: http.Server;
  let trapUrl: string;
  const trapped: string[] = [];
  const seen: string[] = []; // every response body the tenant got

  beforeAll(async () => {
    trap = http.createServer((req, res) => {
      trapped.push(`${req.method} ${req.url} ${JSON.stringify(req.headers)}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((r) => trap.listen(0, '127.0.0.1', r));
    trapUrl = `http://127.0.0.1:${(trap.address() as AddressInfo).port}`;
    stack = await ProcessStack.start(['all'], {
      env: (mock) => ({
        ...CANARIES,
        AGENTLOOP_API_KEYS: `key-a=tenant-a,key-b=tenant-b,${TENANT_C_KEY}=tenant-c`,
        AGENTLOOP_MODEL_BASE_URLS: `${mock.url}/compat/v1`,
        AGENTLOOP_MODEL_KEY_ENVS: 'TENANT_MODEL_KEY',
        TENANT_MODEL_KEY: 'allowed-model-key',
        LOG_LEVEL: 'debug',
      }),
    });
  }, 60_000);

  afterAll(async () => {
    await stack?.stop();
    await new Promise((r) => trap?.close(r));
  });

  const post = async (body: unknown) => {
    const r = await stack.a.createRun(body);
    seen.push(r.text);
    return r;
  };

  it('refuses every unlisted base URL spelling and every unlisted key variable, in model and in each fallback', async () => {
    const port = new URL(trapUrl).port;
    const mockUrl = stack.mock.url;
    const mockPort = new URL(mockUrl).port;
    const baseUrls = [
      `${trapUrl}/v1`,
      `${trapUrl}/compat/v1`,
      `HTTP://127.0.0.1:${port}/compat/v1`,
      `http://127.0.0.1:${mockPort}@127.0.0.1:${port}/compat/v1`,
      `http://0x7f000001:${port}/compat/v1`,
      `http://[::ffff:127.0.0.1]:${port}/compat/v1`,
      `http://2130706433:${port}/compat/v1`,
      `http://localhost:${port}/compat/v1`,
      `${mockUrl}/compat/v1/../../v1`,
      `${mockUrl}/compat/v10`,
      `${mockUrl}/compat/v1?redirect=${trapUrl}`,
      `http://user:pass@127.0.0.1:${mockPort}/compat/v1`,
    ];
    const keyEnvs = [
      'OPENAI_API_KEY',
      'DEEPSEEK_API_KEY',
      'GEMINI_API_KEY',
      'AGENTLOOP_API_KEYS',
      'AGENTLOOP_ADMIN_KEY',
      'CANARY_SECRET',
      'REDIS_URL',
      'PATH',
    ];
    const providers = ['openai', 'deepseek', 'google', 'openai-compatible'] as const;
    const ok = { provider: 'openai', name: 'gpt-4o-mini' };
    let tried = 0;
    for (const provider of providers) {
      const specs = [
        ...baseUrls.map((baseUrl) => ({ provider, name: 'm', baseUrl })),
        ...keyEnvs.map((apiKeyEnv) => ({ provider, name: 'm', baseUrl: `${mockUrl}/compat/v1`, apiKeyEnv })),
        // (openai-compatible needs a baseUrl: covered by the line above)
        ...(provider === 'openai-compatible' ? [] : keyEnvs.map((apiKeyEnv) => ({ provider, name: 'm', apiKeyEnv }))),
      ];
      for (const spec of specs) {
        const field = 'apiKeyEnv' in spec ? 'apiKeyEnv' : 'baseUrl';
        for (const [body, path] of [
          [{ input: 'hi', model: spec }, ['model', field]],
          [{ input: 'hi', model: ok, fallbacks: [spec] }, ['fallbacks', '0', field]],
          [{ input: 'hi', model: ok, fallbacks: [ok, ok, spec] }, ['fallbacks', '2', field]],
        ] as const) {
          const r = await post(body);
          tried++;
          expect(r.status, `${JSON.stringify(body)} → ${r.text}`).toBe(400);
          expect(r.json.error.code).toBe('invalid_request');
          expect(
            r.json.error.details.map((d: { path: string[] }) => d.path.join('.')),
            r.text,
          ).toContain(path.join('.'));
        }
      }
    }
    expect(tried).toBeGreaterThan(300);
  }, 120_000);

  it('turns the same requests on the requests queue into failed runs that call nothing', async () => {
    const queue = new Queue(QUEUES.requests, { connection: stack.redis, prefix: stack.keyPrefix });
    try {
      const ids: string[] = [];
      for (const [i, model] of [
        { provider: 'openai-compatible', name: 'm', baseUrl: `${trapUrl}/v1`, apiKeyEnv: 'OPENAI_API_KEY' },
        { provider: 'openai', name: 'm', apiKeyEnv: 'AGENTLOOP_API_KEYS' },
        { provider: 'google', name: 'gemini-2.5-flash', baseUrl: trapUrl },
      ].entries()) {
        const runId = `canary_q_${i}_${Date.now()}`;
        ids.push(runId);
        await queue.add('run', { tenantId: 'tenant-a', runId, request: { input: 'hi', model } });
      }
      for (const id of ids) {
        const snap = await stack.a.waitTerminal(id);
        expect(snap.status).toBe('failed');
        expect(snap.error!.code).toBe('invalid_request');
        seen.push(JSON.stringify(snap), JSON.stringify((await stack.a.events(id)).events));
      }
    } finally {
      await queue.close();
    }
  });

  it('sends an allowed endpoint only the allowed key, and never the provider key with a chosen base URL', async () => {
    const allowed = `${stack.mock.url}/compat/v1`;
    const withKey = await post({
      input: 'hi',
      model: { provider: 'openai-compatible', name: 'local', baseUrl: allowed, apiKeyEnv: 'TENANT_MODEL_KEY' },
    });
    const noKey = await post({
      input: 'hi',
      model: { provider: 'openai', name: 'gpt-4o-mini', baseUrl: `${allowed}/` },
    });
    expect([withKey.status, noKey.status]).toEqual([202, 202]);
    for (const id of [withKey.json.id, noKey.json.id]) {
      const snap = await stack.a.waitTerminal(id);
      expect(snap.status).toBe('completed');
      seen.push(
        JSON.stringify(snap),
        (await stack.a.getRun(id, 'history')).text,
        JSON.stringify((await stack.a.events(id)).events),
      );
    }
    // Gemini's SDK obeys a per-request httpOptions: model.params must not be able to set it (nor headers)
    const viaParams = await post({
      input: 'hi',
      model: {
        provider: 'google',
        name: 'gemini-2.5-flash',
        params: { httpOptions: { baseUrl: trapUrl, headers: { 'x-evil': '1' } }, headers: { a: 'b' }, temperature: 0 },
      },
    });
    expect(viaParams.status).toBe(202);
    expect((await stack.a.waitTerminal(viaParams.json.id)).status).toBe('completed');
    const auth = stack.mock.journal
      .filter((e) => e.req.provider === 'compat')
      .map((e) => String(e.req.headers.authorization));
    expect(auth).toEqual(expect.arrayContaining(['Bearer allowed-model-key', 'Bearer none']));
    expect(auth.every((a) => a === 'Bearer allowed-model-key' || a === 'Bearer none')).toBe(true);
    // what the OpenAI SDK reads from the environment goes to the operator's OpenAI endpoint only
    const compatHeaders = stack.mock.journal
      .filter((e) => e.req.provider === 'compat')
      .map((e) => JSON.stringify(e.req.headers));
    for (const h of compatHeaders) expect(h).not.toMatch(/CANARY7|CANARY8/);
  });

  it('leaves no trace of a secret anywhere, and nothing reached the trap', async () => {
    for (const path of ['/metrics', '/v1/tools', '/v1/openapi.json', '/v1/runs?limit=200', '/healthz', '/readyz'])
      seen.push((await stack.a.request('GET', path)).text);
    const logs = [...stack.procs.values()].flatMap((p) => p.output);
    expect(logs.length).toBeGreaterThan(0);
    const everything = [...seen, ...logs].join('\n');
    for (const secret of SECRETS)
      expect(everything.includes(secret), `secret ${secret.slice(0, 12)}… leaked`).toBe(false);
    expect(trapped).toEqual([]);
  });
});
