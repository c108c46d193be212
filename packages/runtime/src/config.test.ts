import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.js';

describe('the environment, validated once at start', () => {
  it.each([
    [{ AGENTLOOP_TENANT_LIMITS: 'nope' }, /AGENTLOOP_TENANT_LIMITS: not JSON/],
    [{ AGENTLOOP_TENANT_LIMITS: '{"*":{"requestsPerSecond":-1}}' }, /AGENTLOOP_TENANT_LIMITS\.\*\.requestsPerSecond/],
    [{ AGENTLOOP_MODEL_PRICES: '{"gpt":{"input":1,"output":1}}' }, /AGENTLOOP_MODEL_PRICES/],
    [{ AGENTLOOP_MODEL_BASE_URLS: 'https://u:p@llm.example/v1' }, /AGENTLOOP_MODEL_BASE_URLS/],
    [{ AGENTLOOP_MODEL_KEY_ENVS: 'lower-case' }, /AGENTLOOP_MODEL_KEY_ENVS/],
    [{ AGENTLOOP_RUN_RETENTION_S: '0' }, /AGENTLOOP_RUN_RETENTION_S/],
    [{ AGENTLOOP_COMPRESSION_MODEL: 'gpt-4o' }, /AGENTLOOP_COMPRESSION_MODEL/],
    [{ AGENTLOOP_HTTP_CLIENT: 'curl' }, /AGENTLOOP_HTTP_CLIENT/],
    [{ AGENTLOOP_RUN_LAYOUT: '4' }, /AGENTLOOP_RUN_LAYOUT/],
    [{ AGENTLOOP_RUN_LAYOUT: '2' }, /AGENTLOOP_RUN_LAYOUT: layouts 1 and 2 were removed/],
    [{ AGENTLOOP_RUN_LAYOUT: '1' }, /AGENTLOOP_RUN_LAYOUT: layouts 1 and 2 were removed/],
    [{ AGENTLOOP_API_KEYS: 'secretkey-without-tenant' }, /AGENTLOOP_API_KEYS: entry 1/],
    [{ AGENTLOOP_API_KEYS: 'k=bad tenant' }, /AGENTLOOP_API_KEYS: tenant/],
    [
      { AGENTLOOP_WEBHOOK_SECRETS: 'tenant-a=whsec_c2VjcmV0a2V5,tenant-b=whsec_secretkey!' },
      /AGENTLOOP_WEBHOOK_SECRETS: entry 2 is not tenant=whsec_<base64>/,
    ],
    [{ AGENTLOOP_WEBHOOK_SECRETS: 'whsec_c2VjcmV0a2V5' }, /AGENTLOOP_WEBHOOK_SECRETS: entry 1/],
    [
      { AGENTLOOP_WEBHOOK_ALLOWED_URLS: 'https://hooks.example/a?secretkey=1' },
      /AGENTLOOP_WEBHOOK_ALLOWED_URLS: 'https:\/\/hooks.example\/a\?secretkey=1' is not an http\(s\) URL prefix/,
    ],
    [{ AGENTLOOP_WEBHOOK_RETRY_BASE_MS: '0' }, /AGENTLOOP_WEBHOOK_RETRY_BASE_MS/],
  ])('%j stops the process with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
    try {
      loadConfig(env);
    } catch (e) {
      if (!('AGENTLOOP_WEBHOOK_ALLOWED_URLS' in env)) expect(String(e)).not.toContain('secretkey'); // a key is never echoed
    }
  });

  it('reads the new settings', () => {
    const c = loadConfig({
      AGENTLOOP_TENANT_LIMITS: '{"*":{"activeRuns":3}}',
      AGENTLOOP_RUN_RETENTION_S: '60',
      AGENTLOOP_MODEL_BASE_URLS: 'https://a.example/v1, http://b:1/',
      AGENTLOOP_MODEL_KEY_ENVS: 'A_KEY,B_KEY',
      AGENTLOOP_MODEL_PRICES: '{"openai/x":{"input":1,"output":2}}',
      AGENTLOOP_COMPRESSION_MODEL: 'google/gemini-2.5-flash',
    });
    expect(() => loadConfig({ AGENTLOOP_RUN_LAYOUT: '3' })).not.toThrow();
    expect(c).toMatchObject({
      tenantLimits: { '*': { activeRuns: 3 } },
      runRetentionS: 60,
      modelBaseUrls: ['https://a.example/v1', 'http://b:1/'],
      modelKeyEnvs: ['A_KEY', 'B_KEY'],
      compressionModel: 'google/gemini-2.5-flash',
    });
  });

  it('reads the webhook settings: secrets as key bytes, the retry base, the allowed URL prefixes', () => {
    const c = loadConfig({
      AGENTLOOP_WEBHOOK_SECRETS: 'tenant-a=whsec_c2VjcmV0LWE=, t.b@x=c2VjcmV0LWI=',
      AGENTLOOP_WEBHOOK_RETRY_BASE_MS: '50',
      AGENTLOOP_WEBHOOK_ALLOWED_URLS: 'http://10.0.0.5:8080/hooks',
    });
    expect([...c.webhooks.secrets].map(([t, k]) => [t, k.toString()])).toEqual([
      ['tenant-a', 'secret-a'],
      ['t.b@x', 'secret-b'],
    ]);
    expect(c.webhooks).toMatchObject({ retryBaseMs: 50, allowedUrls: ['http://10.0.0.5:8080/hooks'] });
    expect(loadConfig({}).webhooks).toEqual({
      secrets: new Map(),
      retryBaseMs: 5000,
      allowedUrls: [],
      timeoutMs: 10_000,
    });
  });

  it('hands the providers their variables, validated, and only the key variables the operator listed', () => {
    const c = loadConfig({
      OPENAI_API_KEY: 'sk-o',
      OPENAI_BASE_URL: 'http://127.0.0.1:9/v1',
      GEMINI_API_KEY: 'g',
      DEEPSEEK_API_KEY: 'd',
      DEEPSEEK_BASE_URL: 'https://ds.example/v1',
      AGENTLOOP_MODEL_KEY_ENVS: 'TENANT_KEY,UNSET_KEY',
      TENANT_KEY: 'tk',
      OTHER_SECRET: 'never',
      HTTPS_PROXY: 'http://proxy:3128',
      AGENTLOOP_HTTP_CLIENT: 'node',
    });
    expect(c.providers).toMatchObject({
      openai: { apiKey: 'sk-o', baseUrl: 'http://127.0.0.1:9/v1' },
      google: { apiKey: 'g' },
      deepseek: { apiKey: 'd', baseUrl: 'https://ds.example/v1' },
      httpClient: 'node',
      proxy: true,
    });
    expect([...c.providers.modelKeys!]).toEqual([['TENANT_KEY', 'tk']]);
    expect(loadConfig({ OPENAI_API_KEY: '' }).providers.openai?.apiKey).toBeUndefined(); // empty = unset
    for (const name of ['OPENAI_BASE_URL', 'GEMINI_BASE_URL', 'DEEPSEEK_BASE_URL'])
      expect(() => loadConfig({ [name]: 'api.example.com/v1' })).toThrow(new RegExp(`${name}: an http\\(s\\) URL`));
  });

  it('AGENTLOOP_PARTITIONS: 1 to 64 partitions, partition 0 under the prefix itself and p under <prefix>-<p>', () => {
    expect(loadConfig({}).partitionPrefixes).toEqual(['agentloop']);
    expect(loadConfig({ AGENTLOOP_PARTITIONS: '3', AGENTLOOP_PREFIX: 'prod' }).partitionPrefixes).toEqual([
      'prod',
      'prod-1',
      'prod-2',
    ]);
    // in cluster mode each partition is its own hash tag: its own slot, so partitions spread over the shards
    expect(
      loadConfig({ AGENTLOOP_PARTITIONS: '3', AGENTLOOP_PREFIX: 'prod', REDIS_CLUSTER_NODES: 'r1:6379' })
        .partitionPrefixes,
    ).toEqual(['{prod}', '{prod-1}', '{prod-2}']);
    for (const bad of ['0', '65', '1.5', 'three'])
      expect(() => loadConfig({ AGENTLOOP_PARTITIONS: bad })).toThrow(/invalid environment:\n {2}AGENTLOOP_PARTITIONS/);
    expect(loadConfig({ AGENTLOOP_OPENAPI_TOOLS: '[]' }).openapiTools).toBe('[]'); // passed on to the tool-runner
  });

  it('REDIS_CLUSTER_NODES with one partition: every key and queue under the hash tag of the plain prefix', () => {
    const c = loadConfig({
      REDIS_CLUSTER_NODES: 'r1:6379,r2:6379',
      AGENTLOOP_PARTITIONS: '1',
      AGENTLOOP_PREFIX: 'prod',
    });
    expect(c.redis.kind).toBe('cluster');
    expect(c.prefix).toBe('{prod}');
    expect(loadConfig({ AGENTLOOP_PREFIX: 'prod' }).prefix).toBe('prod'); // one Redis: the prefix as it is
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'r1:6379', AGENTLOOP_PREFIX: '{prod}' })).toThrow(
      /contains '\{' or '\}'/,
    );
  });

  it('AGENTLOOP_CONSOLE_TRACE_URL: the console links trace ids there; anything but an http(s) URL with {traceId} stops the process', () => {
    expect(loadConfig({}).consoleTraceUrl).toBeNull();
    expect(loadConfig({ AGENTLOOP_CONSOLE_TRACE_URL: 'http://localhost:16686/trace/{traceId}' }).consoleTraceUrl).toBe(
      'http://localhost:16686/trace/{traceId}',
    );
    for (const bad of ['http://localhost:16686/trace/', 'javascript:alert(1)//{traceId}', 'ftp://x/{traceId}'])
      expect(() => loadConfig({ AGENTLOOP_CONSOLE_TRACE_URL: bad }), bad).toThrow(/AGENTLOOP_CONSOLE_TRACE_URL/);
  });

  it('AGENTLOOP_CORS_ORIGINS: none by default; origins as browsers send them; anything but an origin stops the process', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(
      loadConfig({
        AGENTLOOP_CORS_ORIGINS:
          ' https://app.example.com, http://localhost:5173,HTTPS://Admin.Example.com:443,http://[::1]:8080, https://app.example.com',
      }).corsOrigins,
    ).toEqual(['https://app.example.com', 'http://localhost:5173', 'https://admin.example.com', 'http://[::1]:8080']);
    for (const bad of [
      'app.example.com',
      'https://app.example.com/',
      'https://app.example.com/app',
      'https://app.example.com?x=1',
      'https://app.example.com#x',
      'https://u:p@app.example.com',
      '*',
      'null',
      'ftp://files.example.com',
      'https://app.example.com:99999',
    ])
      expect(() => loadConfig({ AGENTLOOP_CORS_ORIGINS: `https://ok.example.com,${bad}` }), bad).toThrow(
        /invalid environment:\n {2}AGENTLOOP_CORS_ORIGINS: '.*' is not an origin/,
      );
  });
});
