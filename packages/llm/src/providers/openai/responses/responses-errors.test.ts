import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlmServer, type ReplySpec } from '@agentloop/testing';
import { OpenAIResponsesModel } from './openai-responses-model.js';
import { ProviderRegistry } from '../../registry.js';
import { LlmError, type ModelCallRequest } from '../../../types.js';

describe('Responses failures are classified; finishes the loop can handle', () => {
  let mock: MockLlmServer;
  let reply: ReplySpec = { text: 'ok' };
  let model: OpenAIResponsesModel;
  beforeAll(async () => {
    mock = await startMockLlm({ contextWindows: { tiny: 40 }, script: () => reply });
    model = new OpenAIResponsesModel({ apiKey: 'k', baseURL: `${mock.url}/v1` });
  });
  afterAll(async () => {
    await mock.close();
  });

  const req = (over: Partial<ModelCallRequest> = {}): ModelCallRequest => ({
    model: { provider: 'openai', name: 'gpt-4o-mini', params: {} },
    messages: [{ role: 'user', content: 'q' }],
    tools: null,
    ...over,
  });
  const failure = async (spec: ReplySpec, over: Partial<ModelCallRequest> = {}): Promise<LlmError> => {
    reply = spec;
    const e = await model.call(req(over)).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(LlmError);
    return e as LlmError;
  };

  it('maps HTTP errors: 429 with retry-after-ms / retry-after, 5xx, auth, and bad requests', async () => {
    const limited = await failure({
      error: {
        status: 429,
        message: 'Rate limit reached',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after-ms': '1500' },
      },
    });
    expect([limited.kind, limited.opts.retryAfterMs, limited.retryable]).toEqual(['rate_limit', 1500, true]);
    expect(
      (await failure({ error: { status: 429, message: 'slow', headers: { 'retry-after': '3' } } })).opts.retryAfterMs,
    ).toBe(3000);
    expect((await failure({ error: { status: 503, message: 'overloaded' } })).kind).toBe('server');
    expect((await failure({ error: { status: 401, message: 'Incorrect API key provided' } })).kind).toBe('auth');
    expect((await failure({ error: { status: 400, message: 'bad', code: 'invalid_value' } })).kind).toBe(
      'invalid_request',
    );
  });

  it('maps a streamed context overflow (an error event) to context_length, and stream failures by their code', async () => {
    expect(
      (
        await failure(
          {},
          {
            model: { provider: 'openai', name: 'tiny', params: {} },
            messages: [{ role: 'user', content: 'z'.repeat(500) }],
          },
        )
      ).kind,
    ).toBe('context_length');
    expect(
      (
        await failure({
          failure: { code: 'server_error', message: 'An error occurred while processing your request.' },
        })
      ).kind,
    ).toBe('server');
    expect(
      (await failure({ failure: { code: 'rate_limit_exceeded', message: 'Rate limit reached for requests' } })).kind,
    ).toBe('rate_limit');
    expect(
      (await failure({ failure: { code: 'invalid_prompt', message: 'Invalid prompt: your prompt was flagged' } })).kind,
    ).toBe('content_filter');
  });

  it('a response cut off by the content filter is content_filter; one cut by max_output_tokens is finishReason length, text kept, unfinished calls dropped', async () => {
    const filtered = await failure({ text: 'partial', incomplete: 'content_filter' });
    expect([filtered.kind, filtered.opts.outputStarted]).toEqual(['content_filter', true]);
    reply = {
      text: 'as far as it got',
      toolCalls: [{ name: 'f', args: { long: 'y'.repeat(50) } }],
      incomplete: 'max_output_tokens',
      chunking: 'fine',
    };
    const cut = await model.call(req({ tools: [{ name: 'f', description: '', parameters: {} }] }));
    expect([cut.finishReason, cut.message.content, cut.message.toolCalls]).toEqual([
      'length',
      'as far as it got',
      undefined,
    ]);
  });

  it('a refusal is the model’s answer (visible text) with finishReason content_filter', async () => {
    reply = { refusal: 'I can’t help with that.' };
    const deltas: string[] = [];
    const res = await model.call(req({ onTextDelta: (t) => deltas.push(t) }));
    expect([res.message.content, res.finishReason, deltas.join('')]).toEqual([
      'I can’t help with that.',
      'content_filter',
      'I can’t help with that.',
    ]);
  });

  it('a stream cut mid-way is a retryable network error with outputStarted; an abort is aborted', async () => {
    const cut = await failure({ text: 'one two three four five', chunking: 'fine', cutAfterFrames: 3 });
    expect([cut.kind, cut.opts.outputStarted]).toEqual(['network', true]);
    const ac = new AbortController();
    reply = { text: 'slow answer', chunking: 'fine', delayMs: 50 };
    const p = model.call(req({ signal: ac.signal, onTextDelta: () => ac.abort() }));
    expect(((await p.catch((e: unknown) => e)) as LlmError).kind).toBe('aborted');
  });

  it('no headers within the client’s timeout is a timeout; an abort while waiting for them is aborted; a refused connection is a network error', async () => {
    const slow = new OpenAIResponsesModel({ apiKey: 'k', baseURL: `${mock.url}/v1`, timeoutMs: 300 });
    const late = () => new Promise<ReplySpec>((r) => setTimeout(() => r({ text: 'late' }), 1500));
    mock.setScript(late);
    try {
      const timedOut = (await slow.call(req()).catch((e: unknown) => e)) as LlmError;
      expect([timedOut.kind, timedOut.opts.outputStarted]).toEqual(['timeout', false]);
      const ac = new AbortController();
      setTimeout(() => ac.abort(), 50);
      expect(((await slow.call(req({ signal: ac.signal })).catch((e: unknown) => e)) as LlmError).kind).toBe('aborted');
    } finally {
      mock.setScript(() => reply);
    }
    const refused = new OpenAIResponsesModel({ apiKey: 'k', baseURL: 'http://127.0.0.1:9/v1' });
    expect(((await refused.call(req()).catch((e: unknown) => e)) as LlmError).kind).toBe('network');
  });
});

describe('an endpoint without the Responses API falls back to Chat Completions', () => {
  let chatOnly: MockLlmServer;
  beforeAll(async () => {
    chatOnly = await startMockLlm({ responsesApi: false, script: () => ({ text: 'answered by chat' }) });
  });
  afterAll(async () => {
    await chatOnly.close();
  });

  it('404 on POST /responses: this call and every later one go to /chat/completions; the operator is told once', async () => {
    const warnings: string[] = [];
    const registry = new ProviderRegistry({ openai: { apiKey: 'k', baseUrl: `${chatOnly.url}/v1` } }, undefined, {
      warn: (m) => warnings.push(m),
    });
    const client = registry.clientFor({ provider: 'openai', name: 'gpt-4o-mini', params: {} }) as OpenAIResponsesModel;
    expect(client).toBeInstanceOf(OpenAIResponsesModel);
    for (let i = 0; i < 2; i++) {
      const res = await client.call({
        model: { provider: 'openai', name: 'gpt-4o-mini', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
      });
      expect(res.message.content).toBe('answered by chat');
    }
    expect(client.fellBackToChat).toBe(true);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/no Responses API/);
    expect(chatOnly.journal.map((j) => [j.req.wire, j.status])).toEqual([
      ['chat', 200],
      ['chat', 200],
    ]); // the 404 never reached a route
    // model.api "chat" is a Chat client from the start
    expect(registry.clientFor({ provider: 'openai', name: 'gpt-4o-mini', api: 'chat', params: {} })).not.toBeInstanceOf(
      OpenAIResponsesModel,
    );
  });

  it('/responses is tried again after reprobeAfterMs: an endpoint that gained the API gets it back, one still without it stays on Chat', async () => {
    const warnings: string[] = [];
    let t = 0;
    chatOnly.setResponsesApi(false);
    const client = new OpenAIResponsesModel({
      apiKey: 'k',
      baseURL: `${chatOnly.url}/v1`,
      reprobeAfterMs: 1000,
      now: () => t,
      onWarn: (m) => warnings.push(m),
    });
    const call = async () =>
      (
        await client.call({
          model: { provider: 'openai', name: 'gpt-4o-mini', params: {} },
          messages: [{ role: 'user', content: 'q' }],
          tools: null,
        })
      ).message.content;
    const wires = () => chatOnly.journal.slice(before).map((j) => j.req.wire);
    const before = chatOnly.journal.length;
    expect(await call()).toBe('answered by chat');
    t = 999;
    expect(await call()).toBe('answered by chat'); // within the window: straight to Chat (no second 404)
    t = 1000;
    expect(await call()).toBe('answered by chat'); // tried again, 404 again: Chat, and no second warning
    expect(warnings).toHaveLength(1);
    chatOnly.setResponsesApi(true); // the endpoint is upgraded
    expect(await call()).toBe('answered by chat'); // the window restarted at t = 1000
    t = 2000;
    expect(await call()).toBe('answered by chat'); // the script's text, now served by /responses
    expect(client.fellBackToChat).toBe(false);
    expect(warnings).toHaveLength(2);
    expect(warnings[1]).toMatch(/Responses API again/);
    expect(wires()).toEqual(['chat', 'chat', 'chat', 'chat', 'responses']);
    chatOnly.setResponsesApi(false);
  });

  it('a 404 that is OpenAI’s "model not found" is no reason to fall back', async () => {
    const mock = await startMockLlm({
      script: () => ({
        error: {
          status: 404,
          message: 'The model `gpt-9` does not exist or you do not have access to it.',
          code: 'model_not_found',
        },
      }),
    });
    const client = new OpenAIResponsesModel({ apiKey: 'k', baseURL: `${mock.url}/v1` });
    const err = await client
      .call({
        model: { provider: 'openai', name: 'gpt-9', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
      })
      .catch((e: unknown) => e);
    expect((err as LlmError).kind).toBe('invalid_request');
    expect(client.fellBackToChat).toBe(false);
    await mock.close();
  });
});
