import OpenAI from 'openai';
import { ToolCallAssembler } from '../../stream/tool-call-assembler.js';
import { LlmError, type LlmUsage, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../types.js';
import { toOpenAIMessages, toOpenAITools } from './convert-messages.js';
import { mapOpenAIError } from './map-error.js';
import { mapOpenAIFinishReason } from './map-finish-reason.js';
import { isOpenAIReasoningModel, newOpenAIClient, transportOf, type OpenAIClientOptions } from './openai-client.js';
import { chatOutput } from './chat-output.js';

export type OpenAIChatModelOptions = OpenAIClientOptions;

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
    this.transport = transportOf(opts);
    this.client = newOpenAIClient(opts);
  }

  async call(req: ModelCallRequest): Promise<ModelResponse> {
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(req.model.params ?? {})) if (!RESERVED_PARAMS.has(k)) params[k] = v;
    const output = chatOutput(this.opts.provider, req);
    const body = {
      ...params,
      ...output.body,
      model: req.model.name,
      messages: toOpenAIMessages(output.messages, { sendReasoning: this.opts.provider === 'deepseek' }),
      ...(req.tools?.length ? { tools: toOpenAITools(req.tools) } : {}),
      // OpenAI's reasoning models reject stop sequences; ReAct's parser stops at an Observation by itself
      ...(req.stop?.length && !(this.opts.provider === 'openai' && isOpenAIReasoningModel(req.model.name)) ? { stop: mergeStops(params.stop, req.stop) } : {}),
      // OpenAI's prompt cache routes the requests of one conversation together (DeepSeek and others get no such field)
      ...(req.cacheKey && this.opts.provider === 'openai' ? { prompt_cache_key: req.cacheKey } : {}),
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
        const delta = (choice.delta ?? {}) as { content?: string | null; refusal?: string | null; reasoning_content?: string | null; tool_calls?: Array<{ index?: number; id?: string; function?: { name?: string; arguments?: string } }> };
        if (typeof delta.reasoning_content === 'string') {
          sawReasoning = true;
          if (delta.reasoning_content) {
            reasoning += delta.reasoning_content;
            outputStarted = true;
            req.onReasoningDelta?.(delta.reasoning_content);
          }
        }
        // a structured-output refusal is the model's answer too (it then fails the schema, visibly)
        for (const piece of [delta.content, delta.refusal])
          if (piece) {
            text += piece;
            outputStarted = true;
            req.onTextDelta?.(piece);
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
