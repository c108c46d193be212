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
    [{ AGENTLOOP_API_KEYS: 'secretkey-without-tenant' }, /AGENTLOOP_API_KEYS: entry 1/],
    [{ AGENTLOOP_API_KEYS: 'k=bad tenant' }, /AGENTLOOP_API_KEYS: tenant/],
  ])('%j stops the process with a message naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(message);
    try {
      loadConfig(env);
    } catch (e) {
      expect(String(e)).not.toContain('secretkey'); // a key is never echoed
    }
  });

  it('reads the new settings', () => {
    const c = loadConfig({
      AGENTLOOP_TENANT_LIMITS: '{"*":{"activeRuns":3}}', AGENTLOOP_RUN_RETENTION_S: '60', AGENTLOOP_MODEL_BASE_URLS: 'https://a.example/v1, http://b:1/',
      AGENTLOOP_MODEL_KEY_ENVS: 'A_KEY,B_KEY', AGENTLOOP_MODEL_PRICES: '{"openai/x":{"input":1,"output":2}}', AGENTLOOP_COMPRESSION_MODEL: 'google/gemini-2.5-flash',
    });
    expect(loadConfig({}).runLayout).toBe(3);
    expect(loadConfig({ AGENTLOOP_RUN_LAYOUT: '2' }).runLayout).toBe(2);
    expect(loadConfig({ AGENTLOOP_RUN_LAYOUT: '1' }).runLayout).toBe(1);
    expect(c).toMatchObject({ tenantLimits: { '*': { activeRuns: 3 } }, runRetentionS: 60, modelBaseUrls: ['https://a.example/v1', 'http://b:1/'], modelKeyEnvs: ['A_KEY', 'B_KEY'], compressionModel: 'google/gemini-2.5-flash' });
  });
});
