import type { Message, ModelSpec, ToolCall } from '@agentloop/protocol';

/** A tool as offered to a model. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface LlmUsage {
  promptTokens: number;
  completionTokens: number;
  reasoningTokens: number;
  cachedTokens: number;
}

export interface ModelCallRequest {
  model: ModelSpec;
  messages: Message[];
  /** null or empty: the request carries no tools (final-answer calls). */
  tools: ToolSpec[] | null;
  /** Stop sequences (ReAct stops before an `Observation:` the model would invent). */
  stop?: string[];
  /**
   * Structured output (SPEC §2 `output`): the final answer is asked for in the provider's native structured form
   * (Responses `text.format`, Chat `response_format`, Gemini `responseJsonSchema`, DeepSeek JSON mode). Adapters send it
   * only where the provider accepts it together with this request's tools.
   */
  output?: { schema: Record<string, unknown>; name: string };
  /** A stable key of the conversation (thread or run id) for the provider's prompt cache (OpenAI `prompt_cache_key`). */
  cacheKey?: string;
  signal?: AbortSignal;
  onTextDelta?: (text: string) => void;
  onReasoningDelta?: (text: string) => void;
}

export interface ModelResponse {
  /** The assistant message in canonical form (tool call ids always set). */
  message: Message & { role: 'assistant' };
  finishReason: 'stop' | 'tool_calls' | 'length' | 'content_filter' | 'other';
  usage: LlmUsage;
  provider: string;
  model: string;
}

/** One provider behind a two-method-free interface: turn a canonical request into a canonical response. */
export interface ModelClient {
  readonly provider: string;
  call(req: ModelCallRequest): Promise<ModelResponse>;
}

export type LlmErrorKind =
  | 'rate_limit'
  | 'server'
  | 'network'
  | 'timeout'
  | 'context_length'
  | 'content_filter'
  | 'invalid_request'
  | 'auth'
  | 'aborted'
  | 'config';

/** A provider failure, classified. `outputStarted` is set when deltas reached the caller before it failed. */
export class LlmError extends Error {
  constructor(
    readonly kind: LlmErrorKind,
    message: string,
    readonly opts: {
      status?: number;
      retryAfterMs?: number;
      outputStarted?: boolean;
      cause?: unknown;
      throttled?: 'concurrency' | 'rate';
    } = {},
  ) {
    super(message);
    this.name = 'LlmError';
  }
  get retryable(): boolean {
    return this.kind === 'rate_limit' || this.kind === 'server' || this.kind === 'network' || this.kind === 'timeout';
  }
}

/**
 * Admission to a provider before each attempt (per-provider concurrency and rate limits). Resolves with a release
 * function once the call may start; rejects with a `throttled` rate_limit LlmError when the caller should come
 * back later (the chain neither retries nor falls back on it: the provider is not failing, we are holding back).
 */
export interface ProviderGate {
  acquire(provider: string, signal?: AbortSignal): Promise<() => Promise<void>>;
}

export type { ToolCall };
