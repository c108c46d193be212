import type OpenAI from 'openai';
import { LlmError, type ModelCallRequest, type ModelClient, type ModelResponse } from '../../../types.js';
import { OpenAIChatModel } from '../openai-chat-model.js';
import { newOpenAIClient, transportOf, type OpenAIClientOptions } from '../openai-client.js';
import { isMissingResponsesApi, mapResponsesError } from './map-error.js';
import { ResponsesStreamReader } from './map-stream.js';
import { responsesBody } from './request-body.js';

export interface OpenAIResponsesModelOptions extends Omit<OpenAIClientOptions, 'provider'> {
  /** Told once when the endpoint turns out to have no Responses API (and Chat Completions serves it from then on). */
  onWarn?: (message: string, fields: Record<string, unknown>) => void;
}

/**
 * OpenAI's Responses API through the official SDK, streaming and stateless (SPEC §2 `model.api: "responses"`).
 * An endpoint that answers 404 to `POST /responses` — an OpenAI-compatible server with Chat Completions only — is
 * served by Chat Completions from then on (this client stands for that one endpoint).
 */
export class OpenAIResponsesModel implements ModelClient {
  readonly provider = 'openai';
  readonly transport: 'node' | 'fetch';
  private readonly client: OpenAI;
  private chat: OpenAIChatModel | null = null;

  constructor(private readonly opts: OpenAIResponsesModelOptions) {
    this.transport = transportOf({ ...opts, provider: 'openai' });
    this.client = newOpenAIClient({ ...opts, provider: 'openai' });
  }

  /** Whether this endpoint is served by Chat Completions (it has no Responses API). */
  get fellBackToChat(): boolean {
    return this.chat !== null;
  }

  async call(req: ModelCallRequest): Promise<ModelResponse> {
    if (this.chat) return this.chat.call(req);
    const reader = new ResponsesStreamReader(req, req.model.name);
    try {
      const body = responsesBody(req) as unknown as OpenAI.Responses.ResponseCreateParamsStreaming;
      const stream = await this.client.responses.create(body, { signal: req.signal });
      for await (const event of stream) reader.push(event);
      // the SDK ends a stream quietly when the caller aborts it
      if (req.signal?.aborted) throw new LlmError('aborted', 'request aborted', { outputStarted: reader.outputStarted });
    } catch (err) {
      if (!reader.outputStarted && isMissingResponsesApi(err)) return this.toChat().call(req);
      throw mapResponsesError(err, reader.outputStarted);
    }
    return reader.finish();
  }

  private toChat(): OpenAIChatModel {
    if (!this.chat) {
      const { onWarn, ...client } = this.opts;
      this.chat = new OpenAIChatModel({ ...client, provider: 'openai' });
      onWarn?.('the OpenAI endpoint has no Responses API (404 on POST /responses): Chat Completions serves it from now on', { baseURL: this.opts.baseURL ?? 'https://api.openai.com/v1' });
    }
    return this.chat;
  }
}
