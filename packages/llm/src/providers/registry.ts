import type { ModelSpec } from '@agentloop/protocol';
import { LlmError, type ModelClient } from '../types.js';
import { OpenAIChatModel } from './openai/openai-chat-model.js';
import { OpenAIResponsesModel } from './openai/responses/openai-responses-model.js';
import { GeminiModel } from './google/gemini-model.js';
import { nodeFetch } from './node-fetch.js';
import { EndpointPolicy } from '../endpoint-policy.js';
import type { ProviderEndpoint, ProviderSettings } from './provider-settings.js';

const DEEPSEEK_BASE_URL = 'https://api.deepseek.com/v1';

export interface RegistryHooks {
  /** Things an operator should know (e.g. an OpenAI endpoint without the Responses API); the process logs them. */
  warn?: (message: string, fields: Record<string, unknown>) => void;
}

/**
 * Builds (and caches) a ModelClient for a ModelSpec from the operator's provider settings (the validated process
 * configuration). Credentials come from there only. A spec's `baseUrl` and `apiKeyEnv` override the provider's
 * defaults, and only when the operator allowed them (EndpointPolicy): intake refuses the others with 400, and this
 * check repeats it before any request, for runs stored before a configuration change.
 */
export class ProviderRegistry {
  private readonly cache = new Map<string, ModelClient>();

  constructor(
    private readonly settings: ProviderSettings,
    private readonly policy: EndpointPolicy = new EndpointPolicy(),
    private readonly hooks: RegistryHooks = {},
  ) {}

  clientFor(spec: ModelSpec): ModelClient {
    if (spec.provider === 'google') {
      const apiKey = this.key(spec, 'GEMINI_API_KEY', this.settings.google);
      const baseUrl = this.baseUrl(spec, this.settings.google?.baseUrl);
      const key = `google|${baseUrl ?? ''}|${apiKey}`;
      let gemini = this.cache.get(key);
      if (!gemini) {
        gemini = new GeminiModel({ apiKey, baseUrl });
        this.cache.set(key, gemini);
      }
      return gemini;
    }
    const { provider, apiKey, baseURL } = this.resolve(spec);
    // provider openai speaks the Responses API unless the spec asks for Chat Completions (SPEC §2 model.api)
    const responses = provider === 'openai' && spec.api !== 'chat';
    const key = `${provider}|${responses ? 'responses' : 'chat'}|${baseURL ?? ''}|${apiKey}|${spec.baseUrl === undefined}`;
    let client = this.cache.get(key);
    if (!client) {
      const operatorEndpoint = spec.provider === 'openai' && spec.baseUrl === undefined;
      const opts = {
        apiKey,
        baseURL,
        operatorEndpoint,
        customHeaders: this.settings.openaiCustomHeaders,
        ...(this.useNodeFetch() ? { fetch: nodeFetch } : {}),
      };
      client = responses
        ? new OpenAIResponsesModel({ ...opts, ...(this.hooks.warn ? { onWarn: this.hooks.warn } : {}) })
        : new OpenAIChatModel({ provider, ...opts });
      this.cache.set(key, client);
    }
    return client;
  }

  private resolve(spec: ModelSpec): {
    provider: 'openai' | 'deepseek' | 'openai-compatible';
    apiKey: string;
    baseURL?: string;
  } {
    switch (spec.provider) {
      case 'openai':
        return {
          provider: 'openai',
          apiKey: this.key(spec, 'OPENAI_API_KEY', this.settings.openai),
          baseURL: this.baseUrl(spec, this.settings.openai?.baseUrl),
        };
      case 'deepseek':
        return {
          provider: 'deepseek',
          apiKey: this.key(spec, 'DEEPSEEK_API_KEY', this.settings.deepseek),
          baseURL: this.baseUrl(spec, this.settings.deepseek?.baseUrl ?? DEEPSEEK_BASE_URL),
        };
      case 'openai-compatible':
        return {
          provider: 'openai-compatible',
          apiKey: spec.apiKeyEnv ? this.key(spec, null, undefined) : 'none',
          baseURL: this.baseUrl(spec, undefined),
        };
      case 'google':
        throw new LlmError('config', 'unreachable: google is served by GeminiModel');
    }
  }

  /** node:http unless told otherwise — or unless a proxy is configured (global fetch then applies Node's proxy support). */
  private useNodeFetch(): boolean {
    return this.settings.httpClient !== 'fetch' && !this.settings.proxy;
  }

  /**
   * The key from the spec's (allowed) apiKeyEnv, else from the provider's own variable — but never the provider's
   * own key for a base URL the request chose: that key was configured for the provider's endpoint only.
   */
  private key(spec: ModelSpec, providerVar: string | null, provider: ProviderEndpoint | undefined): string {
    if (spec.apiKeyEnv !== undefined && !this.policy.keyEnvAllowed(spec.apiKeyEnv))
      throw new LlmError(
        'config',
        `model.apiKeyEnv names a variable the operator did not list in AGENTLOOP_MODEL_KEY_ENVS`,
      );
    if (spec.apiKeyEnv === undefined && spec.baseUrl !== undefined) return 'none';
    const v = spec.apiKeyEnv !== undefined ? this.settings.modelKeys?.get(spec.apiKeyEnv) : provider?.apiKey;
    if (!v)
      throw new LlmError(
        'config',
        `${spec.apiKeyEnv ?? providerVar ?? 'model.apiKeyEnv'} is not set: provider ${spec.provider} cannot be called`,
      );
    return v;
  }

  /** The spec's base URL (normalized, when the operator allowed it), else the provider's default. */
  private baseUrl(spec: ModelSpec, fallback: string | undefined): string | undefined {
    if (spec.baseUrl === undefined) return fallback;
    const allowed = this.policy.allowedBaseUrl(spec.baseUrl);
    if (allowed === null)
      throw new LlmError(
        'config',
        `model.baseUrl is not under a prefix the operator listed in AGENTLOOP_MODEL_BASE_URLS`,
      );
    return allowed;
  }
}
