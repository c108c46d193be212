/** One provider's endpoint and key, as the operator configured them (OPENAI_*, GEMINI_*, DEEPSEEK_*). */
export interface ProviderEndpoint {
  apiKey?: string;
  baseUrl?: string;
}

/**
 * What the model providers are configured with: the providers' part of the validated process configuration
 * (`loadConfig` in @agentloop/runtime builds it from the environment, once, at start). Nothing under providers/
 * reads the environment itself.
 */
export interface ProviderSettings {
  openai?: ProviderEndpoint;
  google?: ProviderEndpoint;
  deepseek?: ProviderEndpoint;
  /**
   * The values of the variables the operator listed in AGENTLOOP_MODEL_KEY_ENVS, by name: the only variables a
   * request's `model.apiKeyEnv` can reach (a listed variable that is not set is absent).
   */
  modelKeys?: ReadonlyMap<string, string>;
  /** The OpenAI SDK's transport (AGENTLOOP_HTTP_CLIENT) [node]. */
  httpClient?: 'node' | 'fetch';
  /** An HTTP(S) proxy is configured: the SDKs then use global fetch, which applies Node's proxy support. */
  proxy?: boolean;
  /**
   * OPENAI_CUSTOM_HEADERS as the OpenAI SDK will read it from the environment by itself: the header names to switch
   * off for endpoints that are not the operator's OpenAI.
   */
  openaiCustomHeaders?: string;
}
