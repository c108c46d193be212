import OpenAI from 'openai';
import { Stream } from 'openai/streaming';
import { z } from 'zod';
import { ToolCallAssembler } from '../../stream/tool-call-assembler.js';
import { LlmError, type LlmUsage, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../types.js';
import { toOpenAIMessages, toOpenAITools } from './convert-messages.js';
import { mapOpenAIError } from './map-error.js';
import { mapOpenAIFinishReason } from './map-finish-reason.js';
import { isOpenAIReasoningModel, newOpenAIClient, transportOf, type OpenAIClientOptions } from './openai-client.js';
import { chatOutput } from './chat-output.js';
import { sendStreaming } from './stream-request.js';
import { Count, MaybeCount, ModelName, Str, jsonText, opt } from '../wire.js';

export type OpenAIChatModelOptions = OpenAIClientOptions;

/** Request fields a run's `model.params` may not override (the loop owns them). */
const RESERVED_PARAMS = new Set(['model', 'messages', 'tools', 'tool_choice', 'stream', 'stream_options', 'n']);

// The wire boundary (see ../wire.ts): every chunk is checked for the fields read from it. A field of an unexpected
// type reads as absent rather than discarding its chunk; an entry of a list (a choice, a tool-call fragment, a
// content part) that is not an object is skipped. Schemas strip what they do not name.
const Chunk = z.object({ model: ModelName, usage: z.unknown().optional(), choices: opt(z.array(z.unknown())) });
const Usage = z.object({
  prompt_tokens: Count,
  completion_tokens: Count,
  prompt_tokens_details: opt(z.object({ cached_tokens: MaybeCount })),
  completion_tokens_details: opt(z.object({ reasoning_tokens: Count })),
  /** DeepSeek's cached prompt tokens. */
  prompt_cache_hit_tokens: Count,
});
type ChunkUsage = z.infer<typeof Usage>;
const Choice = z.object({ delta: z.unknown().optional(), finish_reason: z.unknown().optional() });
/** Text as a string, or (some compatible servers) as a list of content parts, whose text parts are read. */
const Content = z.union([Str, z.array(z.unknown()).transform(textOfParts)]);
const Delta = z.object({
  content: opt(Content),
  refusal: opt(Str),
  reasoning_content: opt(Str),
  tool_calls: opt(z.array(z.unknown())),
});
const TextPart = z.object({ type: opt(Str), text: Str });
/** A provider's call id: a string, or a number read as its text. */
const CallId = z.union([Str, z.number().transform(String)]);
const ToolCallDelta = z.object({
  index: opt(z.number().int().min(0)),
  id: opt(CallId),
  function: opt(z.object({ name: opt(Str), arguments: z.unknown().optional() })),
});

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

  /** The request body; built where the call passes it on, so that the call's frame does not keep it while it waits. */
  private body(req: ModelCallRequest): Record<string, unknown> {
    const params: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(req.model.params ?? {})) if (!RESERVED_PARAMS.has(k)) params[k] = v;
    const output = chatOutput(this.opts.provider, req);
    return {
      ...params,
      ...output.body,
      model: req.model.name,
      messages: toOpenAIMessages(output.messages, { sendReasoning: this.opts.provider === 'deepseek' }),
      ...(req.tools?.length ? { tools: toOpenAITools(req.tools) } : {}),
      // OpenAI's reasoning models reject stop sequences; ReAct's parser stops at an Observation by itself
      ...(req.stop?.length && !(this.opts.provider === 'openai' && isOpenAIReasoningModel(req.model.name))
        ? { stop: mergeStops(params.stop, req.stop) }
        : {}),
      // OpenAI's prompt cache routes the requests of one conversation together (DeepSeek and others get no such field)
      ...(req.cacheKey && this.opts.provider === 'openai' ? { prompt_cache_key: req.cacheKey } : {}),
      stream: true,
      stream_options: { include_usage: true },
    };
  }

  /**
   * The caller's signal reaches the request by a listener rather than AbortSignal.any: a composed signal costs weak
   * references and finalizer cells per call in flight (docs/BENCHMARKS.md, "Capacity"). The request is the SDK's
   * (its URL, headers, errors) sent without its request path, which holds several times our share of a call's heap
   * while it waits (stream-request.ts). Not an async function: while the call waits for its answer, only these
   * callbacks are held, not the frame of the reading loop, which starts with the response.
   */
  call(req: ModelCallRequest): Promise<ModelResponse> {
    const controller = new AbortController();
    const forward = () => controller.abort(req.signal!.reason);
    if (req.signal?.aborted) forward();
    else req.signal?.addEventListener('abort', forward, { once: true });
    return new Promise<Response>((resolve) =>
      resolve(sendStreaming(this.client, this.opts.fetch ?? fetch, '/chat/completions', this.body(req), controller)),
    )
      .then(
        (response) => this.read(req, response, controller),
        (err: unknown) => {
          throw mapOpenAIError(err, false);
        },
      )
      .finally(() => req.signal?.removeEventListener('abort', forward));
  }

  /**
   * The raw SSE stream, read here: the SDK's own chunk stream dereferences every choice, and one sent as null would
   * throw inside it (the call retried, billed again, and failed as a network error). Breaking off the stream aborts
   * the request through `controller`, as the SDK's stream does.
   */
  private async read(req: ModelCallRequest, response: Response, controller: AbortController): Promise<ModelResponse> {
    let outputStarted = false;
    let text = '';
    let reasoning = '';
    let sawReasoning = false;
    let finish: string | null = null;
    let usage: ChunkUsage | null = null;
    let modelName = req.model.name;
    const calls = new ToolCallAssembler();
    try {
      const stream = Stream.fromSSEResponse<unknown>(response, controller, this.client);
      for await (const raw of stream) {
        const chunk = Chunk.safeParse(raw);
        if (!chunk.success) continue;
        const c = chunk.data;
        if (c.model) modelName = c.model;
        if (c.usage !== undefined) {
          const u = Usage.safeParse(c.usage);
          if (u.success) usage = u.data;
        }
        const choice = Choice.safeParse(c.choices?.[0]);
        if (!choice.success) continue;
        const d = Delta.safeParse(choice.data.delta ?? {});
        const delta = d.success ? d.data : {};
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
        for (const raw of delta.tool_calls ?? []) {
          const tc = ToolCallDelta.safeParse(raw);
          if (!tc.success) continue;
          const f = tc.data.function;
          // arguments that came as JSON rather than JSON text: their text (an object is then the call's arguments;
          // anything else is answered invalid_arguments by the loop, never run with arguments it did not send)
          const args =
            f?.arguments === undefined || f.arguments === null
              ? undefined
              : typeof f.arguments === 'string'
                ? f.arguments
                : jsonText(f.arguments);
          calls.add({ index: tc.data.index, id: tc.data.id, name: f?.name, arguments: args });
        }
        // a finish_reason of an unexpected type still ends the response (read as an unknown reason)
        const fr = choice.data.finish_reason;
        if (fr) finish = typeof fr === 'string' ? fr : 'unknown';
      }
    } catch (err) {
      throw mapOpenAIError(err, outputStarted);
    }
    if (finish === null && !usage)
      throw new LlmError('network', 'stream ended before the response was complete', { outputStarted });
    const toolCalls = calls.finish();
    const message: ModelResponse['message'] = {
      role: 'assistant',
      content: text === '' && toolCalls.length ? null : text,
    };
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
  const extra =
    typeof fromParams === 'string'
      ? [fromParams]
      : Array.isArray(fromParams)
        ? fromParams.filter((s): s is string => typeof s === 'string')
        : [];
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

/** The text parts of a content list (`{type: "text", text}`); other parts (images, thinking blocks) are not text. */
function textOfParts(parts: unknown[]): string {
  let text = '';
  for (const p of parts) {
    const r = TextPart.safeParse(p);
    if (r.success && (r.data.type === undefined || r.data.type === 'text')) text += r.data.text;
  }
  return text;
}
