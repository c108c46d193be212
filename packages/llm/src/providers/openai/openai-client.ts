import OpenAI from 'openai';
import { modelProfile } from '../../model-profiles.js';
import { nodeFetch } from '../node-fetch.js';

/** How an OpenAI-family endpoint is reached: shared by the Chat Completions and the Responses adapters. */
export interface OpenAIClientOptions {
  provider: 'openai' | 'deepseek' | 'openai-compatible';
  apiKey: string;
  baseURL?: string;
  timeoutMs?: number;
  /** The SDK's HTTP transport [global fetch]; the registry passes `nodeFetch` (AGENTLOOP_HTTP_CLIENT=node). */
  fetch?: typeof fetch;
  /**
   * Whether this is the operator's own OpenAI endpoint. Only then may the SDK add what it reads from the environment
   * (OPENAI_ORG_ID, OPENAI_PROJECT_ID, OPENAI_CUSTOM_HEADERS); DeepSeek, compatible servers and base URLs a request
   * chose get none of it.
   */
  operatorEndpoint?: boolean;
  /** OPENAI_CUSTOM_HEADERS (ProviderSettings): the names of the headers the SDK adds from it. */
  customHeaders?: string;
}

/** What the SDK would take from the environment, switched off for endpoints that are not the operator's OpenAI. */
export function withoutEnvironment(opts: OpenAIClientOptions): Record<string, unknown> {
  if (opts.operatorEndpoint) return {};
  const custom = opts.customHeaders ?? '';
  const headers = Object.fromEntries(
    custom
      .split('\n')
      .filter((l) => l.includes(':'))
      .map((l) => [l.slice(0, l.indexOf(':')).trim(), null]),
  );
  return { organization: null, project: null, adminAPIKey: null, defaultHeaders: headers };
}

/** The official SDK's client for these options: no SDK retries (the chain retries), our timeout and transport. */
export function newOpenAIClient(opts: OpenAIClientOptions): OpenAI {
  return new OpenAI({
    apiKey: opts.apiKey,
    baseURL: opts.baseURL,
    maxRetries: 0,
    timeout: opts.timeoutMs ?? 600_000,
    ...(opts.fetch ? { fetch: opts.fetch } : {}),
    ...withoutEnvironment(opts),
  });
}

export const transportOf = (opts: OpenAIClientOptions): 'node' | 'fetch' =>
  opts.fetch === nodeFetch ? 'node' : 'fetch';

/**
 * OpenAI's reasoning models: the o-series and the gpt-5 family (not `gpt-5-chat`, the non-reasoning chat model).
 * They take no `stop`, and on the Responses API they return reasoning items (encrypted with
 * `include: ["reasoning.encrypted_content"]`, which other models refuse).
 */
export const isOpenAIReasoningModel = (name: string): boolean =>
  modelProfile('openai', name).profile.reasoning === true;
