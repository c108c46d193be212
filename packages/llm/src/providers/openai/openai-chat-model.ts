import OpenAI from 'openai';
import { ToolCallAssembler } from '../../stream/tool-call-assembler.js';
import { LlmError, type LlmUsage, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../types.js';
import { toOpenAIMessages, toOpenAITools } from './convert-messages.js';
import { mapOpenAIError } from './map-error.js';
import { mapOpenAIFinishReason } from './map-finish-reason.js';
import { nodeFetch } from '../node-fetch.js';

export interface OpenAIChatModelOptions {
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
  env?: Record<string, string | undefined>;
}

/** What the SDK would take from the environment, switched off for endpoints that are not the operator's OpenAI. */
function withoutEnvironment(opts: OpenAIChatModelOptions): Record<string, unknown> {
  if (opts.operatorEndpoint) return {};
  const custom = (opts.env ?? process.env).OPENAI_CUSTOM_HEADERS ?? '';
  const headers = Object.fromEntries(custom.split('\n').filter((l) => l.includes(':')).map((l) => [l.slice(0, l.indexOf(':')).trim(), null]));
  return { organization: null, project: null, adminAPIKey: null, defaultHeaders: headers };
}

/** OpenAI models that take no `stop` (o-series, gpt-5 family). */
const REASONING_MODEL = /^(o1|o3|o4|gpt-5)/;

/** Request fields a run's `model.params` may not override (the loop owns them). */
const RESERVED_PARAMS = new Set(['model', 'messages', 'tools', 'tool_choice', 'stream', 'stream_options', 'n']);

interface ChunkUsage {
  prompt_tokens?: number;
  completion_tokens?: number;
  prompt_tokens_details?: { cached_tokens?: number } | null;
  completion_tokens_details?: { reasoning_tokens?: number } | null;
  prompt_cache_hit_tokens?: number;
}

/** OpenAI Chat Completions (and the wire-compatible DeepSeek and generic endpoints) through the official SDK, streaming. */
export class OpenAIChatModel implements ModelClient {
  readonly provider: string;
  private readonly client: OpenAI;

  /** Which HTTP transport the SDK runs on. */
  readonly transport: 'node' | 'fetch';

  constructor(private readonly opts: OpenAIChatModelOptions) {
    this.provider = opts.provider;
    this.transport = opts.fetch === nodeFetch ? 'node' : 'fetch';
    this.client = new OpenAI({ apiKey: opts.apiKey, baseURL: opts.baseURL, maxRetries: 0, timeout: opts.timeoutMs ?? 600_000, ...(opts.fetch ? { fetch: opts.fetch } : {}), ...withoutEnvironment(opts) });
  }

  async call(req: ModelCallRequest): Promise<ModelResponse> {
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(req.model.params ?? {})) if (!RESERVED_PARAMS.has(k)) params[k] = v;
    const body = {
      ...params,
      model: req.model.name,
      messages: toOpenAIMessages(req.messages, { sendReasoning: this.opts.provider === 'deepseek' }),
      ...(req.tools?.length ? { tools: toOpenAITools(req.tools) } : {}),
      // OpenAI's reasoning models reject stop sequences; ReAct's parser stops at an Observation by itself
      ...(req.stop?.length && !(this.opts.provider === 'openai' && REASONING_MODEL.test(req.model.name)) ? { stop: mergeStops(params.stop, req.stop) } : {}),
      stream: true as const,
      stream_options: { include_usage: true },
    };
    let outputStarted = false;
    let text = '';
    let reasoning = '';
    let sawReasoning = false;
    let finish: string | null = null;
    let usage: ChunkUsage | null = null;
    let modelName = req.model.name;
    const calls = new ToolCallAssembler();
    try {
      const stream = await this.client.chat.completions.create(body as OpenAI.Chat.Completions.ChatCompletionCreateParamsStreaming, {
        signal: req.signal,
      });
      for await (const chunk of stream) {
        if (chunk.model) modelName = chunk.model;
        if (chunk.usage) usage = chunk.usage as ChunkUsage;
        const choice = chunk.choices?.[0];
        if (!choice) continue;
        const delta = (choice.delta ?? {}) as { content?: string | null; reasoning_content?: string | null; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }> };
        if (typeof delta.reasoning_content === 'string') {
          sawReasoning = true;
          if (delta.reasoning_content) {
            reasoning += delta.reasoning_content;
            outputStarted = true;
            req.onReasoningDelta?.(delta.reasoning_content);
          }
        }
        if (delta.content) {
          text += delta.content;
          outputStarted = true;
          req.onTextDelta?.(delta.content);
        }
        for (const tc of delta.tool_calls ?? []) {
          calls.add({ index: tc.index, id: tc.id, name: tc.function?.name, arguments: tc.function?.arguments });
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
    } catch (err) {
      throw mapOpenAIError(err, outputStarted);
    }
    if (finish === null && !usage) throw new LlmError('network', 'stream ended before the response was complete', { outputStarted });
    const toolCalls = calls.finish();
    const message: ModelResponse['message'] = { role: 'assistant', content: text === '' && toolCalls.length ? null : text };
    if (toolCalls.length) message.toolCalls = toolCalls;
    if (sawReasoning || reasoning) message.reasoning = reasoning;
    return {
      message,
      finishReason: mapOpenAIFinishReason(finish, toolCalls.length > 0),
      usage: mapUsage(usage),
      provider: this.provider,
      model: modelName,
    };
  }
}

/** The API takes at most 4 stop sequences: the loop's own come first. */
function mergeStops(fromParams: unknown, own: string[]): string[] {
  const extra = typeof fromParams === 'string' ? [fromParams] : Array.isArray(fromParams) ? fromParams.filter((s): s is string => typeof s === 'string') : [];
  return [...new Set([...own, ...extra])].slice(0, 4);
}

function mapUsage(u: ChunkUsage | null): LlmUsage {
  return {
    promptTokens: u?.prompt_tokens ?? 0,
    completionTokens: u?.completion_tokens ?? 0,
    reasoningTokens: u?.completion_tokens_details?.reasoning_tokens ?? 0,
    cachedTokens: u?.prompt_tokens_details?.cached_tokens ?? u?.prompt_cache_hit_tokens ?? 0,
  };
}
