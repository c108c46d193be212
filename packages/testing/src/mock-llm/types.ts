import type { Message } from '@agentloop/protocol';

/** A model request as the mock understood it, in canonical form (the same for every wire format). */
export interface MockRequest {
  seq: number;
  provider: 'openai' | 'deepseek' | 'compat' | 'google';
  model: string;
  stream: boolean;
  messages: Message[];
  /** Names of the tools offered. */
  tools: string[];
  body: Record<string, unknown>;
  headers: Record<string, string | string[] | undefined>;
  /** When the request reached the server (process.hrtime, comparable across processes on one machine). */
  receivedAt?: bigint;
}

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
  error?: { status: number; message?: string; type?: string; code?: string | null; headers?: Record<string, string>; /** a recorded error body, served as is */ body?: unknown };
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
}

export type Script = (req: MockRequest) => ReplySpec | Promise<ReplySpec>;

export interface JournalEntry {
  req: MockRequest;
  status: number;
  error?: string;
  injected: boolean;
}
