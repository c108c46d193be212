import type OpenAI from 'openai';
import { Stream } from 'openai/streaming';
import { LlmError, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../../types.js';
import { OpenAIChatModel } from '../openai-chat-model.js';
import { newOpenAIClient, transportOf, type OpenAIClientOptions } from '../openai-client.js';
import { isMissingResponsesApi, mapResponsesError } from './map-error.js';
import { ResponsesStreamReader } from './map-stream.js';
import { responsesBody } from './request-body.js';
import { sendStreaming } from '../stream-request.js';

export interface OpenAIResponsesModelOptions extends Omit<OpenAIClientOptions, 'provider'> {
  /** Told when the endpoint turns out to have no Responses API, and when it has one again. */
  onWarn?: (message: string, fields: Record<string, unknown>) => void;
  /** How long Chat Completions serves an endpoint that answered 404 before /responses is tried again [600000]. */
  reprobeAfterMs?: number;
  now?: () => number;
}

/**
 * OpenAI's Responses API through the official SDK, streaming and stateless (SPEC §2 `model.api: "responses"`).
 * An endpoint that answers 404 to `POST /responses` — an OpenAI-compatible server with Chat Completions only — is
 * served by Chat Completions (this client stands for that one endpoint); every `reprobeAfterMs` one call tries
 * /responses again, so an endpoint that gains the API, or whose 404 was a passing fault, gets it back.
 */
export class OpenAIResponsesModel implements ModelClient {
  readonly provider = 'openai';
  readonly transport: 'node' | 'fetch';
  private readonly client: OpenAI;
  private chat: OpenAIChatModel | null = null;
  /** When /responses last answered 404 (null: the endpoint is served by the Responses API). */
  private missingSince: number | null = null;

  constructor(private readonly opts: OpenAIResponsesModelOptions) {
    this.transport = transportOf({ ...opts, provider: 'openai' });
    this.client = newOpenAIClient({ ...opts, provider: 'openai' });
  }

  /** Whether this endpoint is served by Chat Completions (it has no Responses API). */
  get fellBackToChat(): boolean {
    return this.missingSince !== null;
  }

  async call(req: ModelCallRequest): Promise<ModelResponse> {
    const now = this.opts.now ?? Date.now;
    if (this.chat && this.missingSince !== null && now() - this.missingSince < this.reprobeMs)
      return this.chat.call(req);
    const reader = new ResponsesStreamReader(req, req.model.name);
    // the request as the SDK builds it, without its request path (stream-request.ts: what it holds per call in
    // flight); the caller's signal reaches it by a listener, as in the Chat adapter
    const controller = new AbortController();
    const forward = () => controller.abort(req.signal!.reason);
    if (req.signal?.aborted) forward();
    else req.signal?.addEventListener('abort', forward, { once: true });
    try {
      const response = await sendStreaming(
        this.client,
        this.opts.fetch ?? fetch,
        '/responses',
        responsesBody(req) as Record<string, unknown>,
        controller,
      );
      for await (const event of Stream.fromSSEResponse<OpenAI.Responses.ResponseStreamEvent>(
        response,
        controller,
        this.client,
      ))
        reader.push(event);
      // the SDK's stream ends quietly when the caller aborts it
      if (req.signal?.aborted)
        throw new LlmError('aborted', 'request aborted', { outputStarted: reader.outputStarted });
    } catch (err) {
      if (!reader.outputStarted && isMissingResponsesApi(err)) return this.toChat(now()).call(req);
      throw mapResponsesError(err, reader.outputStarted);
    } finally {
      req.signal?.removeEventListener('abort', forward);
    }
    if (this.missingSince !== null) {
      this.missingSince = null;
      this.opts.onWarn?.('the OpenAI endpoint answers the Responses API again: it serves the calls from now on', {
        baseURL: this.baseURL,
      });
    }
    return reader.finish();
  }

  private get reprobeMs(): number {
    return this.opts.reprobeAfterMs ?? 600_000;
  }

  private get baseURL(): string {
    return this.opts.baseURL ?? 'https://api.openai.com/v1';
  }

  private toChat(at: number): OpenAIChatModel {
    const first = this.missingSince === null;
    this.missingSince = at;
    if (!this.chat) {
      const { onWarn: _w, reprobeAfterMs: _r, now: _n, ...client } = this.opts;
      this.chat = new OpenAIChatModel({ ...client, provider: 'openai' });
    }
    if (first)
      this.opts.onWarn?.(
        `the OpenAI endpoint has no Responses API (404 on POST /responses): Chat Completions serves it; /responses is tried again every ${Math.round(this.reprobeMs / 1000)} s`,
        { baseURL: this.baseURL },
      );
    return this.chat;
  }
}
