import type { Message } from '@agentloop/protocol';

/** A model request as the mock understood it, in canonical form (the same for every wire format). */
export interface MockRequest {
  seq: number;
  provider: 'openai' | 'deepseek' | 'compat' | 'google';
  /** The wire format the request came in [chat for the OpenAI family, gemini for google]. */
  wire?: 'chat' | 'responses' | 'gemini';
  model: string;
  stream: boolean;
  messages: Message[];
  /** Names of the tools offered. */
  tools: string[];
  body: Record<string, unknown>;
  /** The structured output the request asked for, as the provider read it (response_format, Gemini's JSON settings). */
  output?: MockOutput;
  headers: Record<string, string | string[] | undefined>;
  /** When the request reached the server (process.hrtime, comparable across processes on one machine). */
  receivedAt?: bigint;
}

/** A request's structured-output settings, per wire format. */
export type MockOutput =
  | { type: 'json_schema'; name: string; schema: unknown; strict: boolean }
  | { type: 'json_object' }
  | { type: 'gemini_json'; mimeType: string; schema: unknown };

export interface MockToolCall {
  name: string;
  args?: unknown;
  /** Raw argument text (overrides args). */
  arguments?: string;
  /** Explicit id; null sends no id at all (providers that omit ids). */
  id?: string | null;
}

/** What the scripted model answers. */
export interface ReplySpec {
  text?: string;
  reasoning?: string;
  toolCalls?: MockToolCall[];
  /**
   * How the stream is cut into chunks: `whole` (one delta per item), `fine` (a few characters per chunk),
   * `interleaved` (parallel calls' fragments alternate), `restated` (each call's arguments are sent in pieces,
   * then restated whole in a last fragment).
   */
  chunking?: 'whole' | 'fine' | 'interleaved' | 'restated';
  /** Delay between chunks (slow streams). */
  delayMs?: number;
  /** Answer with an HTTP error instead. */
  error?: {
    status: number;
    message?: string;
    type?: string;
    code?: string | null;
    headers?: Record<string, string>;
    /** a recorded error body, served as is */ body?: unknown;
  };
  /** Stop the stream (destroy the socket) after this many content frames: a stream cut mid-way. */
  cutAfterFrames?: number;
  /** Serve this raw SSE body verbatim (fixture replay). */
  rawSse?: string;
  /** Serve this raw JSON body (non-stream fixture replay). */
  rawJson?: unknown;
  usage?: { prompt?: number; completion?: number; reasoning?: number; cached?: number };
  /** Play a server that does not honour the request's stop sequences. */
  ignoreStop?: boolean;
  /** Gemini only: the candidate's finishReason [STOP] (e.g. SAFETY, MALFORMED_FUNCTION_CALL). */
  finishReason?: string;
  /** Gemini only: the candidate's finishMessage (e.g. the text of a malformed call). */
  finishMessage?: string;
  /** Responses only: the response ends `incomplete` for this reason (max_output_tokens cuts the calls off). */
  incomplete?: 'max_output_tokens' | 'content_filter';
  /** Responses only: the model refuses, with this text (a `refusal` content part instead of output_text). */
  refusal?: string;
  /** Responses only: the stream reports this failure (an `error` event, then `response.failed`). */
  failure?: { code: string; message: string; param?: string };
}

export type Script = (req: MockRequest) => ReplySpec | Promise<ReplySpec>;

export interface JournalEntry {
  req: MockRequest;
  status: number;
  error?: string;
  injected: boolean;
}
