import type { ModelSpec } from '@agentloop/protocol';
import { LlmError, type ModelClient } from '../types.js';
import { OpenAIChatModel } from './openai/openai-chat-model.js';
import { GeminiModel } from './google/gemini-model.js';
import { nodeFetch } from './node-fetch.js';

export type Env = Record<string, string | undefined>;

/**
 * Builds (and caches) a ModelClient for a ModelSpec from the process environment. Credentials come from the
 * environment only: `model.apiKeyEnv` names the variable for openai-compatible endpoints.
 */
export class ProviderRegistry {
  private readonly cache = new Map<string, ModelClient>();
  constructor(private readonly env: Env = process.env) {}

  clientFor(spec: ModelSpec): ModelClient {
    if (spec.provider === 'google') {
      const apiKey = this.need('GEMINI_API_KEY', spec);
      const key = `google|${this.env.GEMINI_BASE_URL ?? ''}|${apiKey}`;
      let gemini = this.cache.get(key);
      if (!gemini) {
        gemini = new GeminiModel({ apiKey, baseUrl: this.env.GEMINI_BASE_URL || undefined });
        this.cache.set(key, gemini);
      }
      return gemini;
    }
    const { provider, apiKey, baseURL } = this.resolve(spec);
    const key = `${provider}|${baseURL ?? ''}|${apiKey}`;
    let client = this.cache.get(key);
    if (!client) {
      client = new OpenAIChatModel({ provider, apiKey, baseURL, ...(this.useNodeFetch() ? { fetch: nodeFetch } : {}) });
      this.cache.set(key, client);
    }
    return client;
  }

  private resolve(spec: ModelSpec): { provider: 'openai' | 'deepseek' | 'openai-compatible'; apiKey: string; baseURL?: string } {
    switch (spec.provider) {
      case 'openai':
        return { provider: 'openai', apiKey: this.need('OPENAI_API_KEY', spec), baseURL: this.env.OPENAI_BASE_URL || undefined };
      case 'deepseek':
        return { provider: 'deepseek', apiKey: this.need('DEEPSEEK_API_KEY', spec), baseURL: this.env.DEEPSEEK_BASE_URL || 'https://api.deepseek.com/v1' };
      case 'openai-compatible':
        return { provider: 'openai-compatible', apiKey: spec.apiKeyEnv ? this.need(spec.apiKeyEnv, spec) : 'none', baseURL: spec.baseUrl };
      case 'google':
        throw new LlmError('config', 'unreachable: google is served by GeminiModel');
    }
  }

  /** node:http unless told otherwise — or unless a proxy is configured (global fetch then applies Node's proxy support). */
  private useNodeFetch(): boolean {
    if (this.env.AGENTLOOP_HTTP_CLIENT === 'fetch') return false;
    return !['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((k) => this.env[k]);
  }

  private need(name: string, spec: ModelSpec): string {
    const v = this.env[name];
    if (!v) throw new LlmError('config', `${name} is not set: provider ${spec.provider} cannot be called`);
    return v;
  }
}
