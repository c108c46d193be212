import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMockLlm, type MockLlmServer, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { OpenAIChatModel } from './openai-chat-model.js';
import { nodeFetch } from '../node-fetch.js';
import { LlmError, type ModelCallRequest } from '../../types.js';

/**
 * The Chat Completions request goes out as the SDK builds it but not through the SDK's request path
 * (stream-request.ts): its failures must still reach the loop classified as before, on either transport.
 */
describe.each([
  ['node:http', nodeFetch],
  ['global fetch', undefined],
] as const)('Chat Completions failures are classified (%s)', (_name, transport) => {
  let mock: MockLlmServer;
  let reply: ReplySpec | (() => Promise<ReplySpec>) = { text: 'ok' };
  let seen: MockRequest | undefined;
  let model: OpenAIChatModel;
  beforeAll(async () => {
    mock = await startMockLlm({ script: (r) => ((seen = r), typeof reply === 'function' ? reply() : reply) });
    model = new OpenAIChatModel({
      provider: 'openai',
      apiKey: 'sk-test',
      baseURL: `${mock.url}/v1`,
      fetch: transport,
      timeoutMs: 300,
    });
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
  const failure = async (spec: typeof reply, over: Partial<ModelCallRequest> = {}, on = model): Promise<LlmError> => {
    reply = spec;
    const e = await on.call(req(over)).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(LlmError);
    return e as LlmError;
  };

  it('sends the SDK’s request: its path, authentication and headers, the body streamed with usage', async () => {
    reply = { text: 'hello' };
    const res = await model.call(
      req({ model: { provider: 'openai', name: 'gpt-4o-mini', params: { temperature: 0.2 } } }),
    );
    expect(res.message.content).toBe('hello');
    expect(seen!.headers.authorization).toBe('Bearer sk-test');
    expect(seen!.headers['content-type']).toBe('application/json');
    expect(String(seen!.headers['user-agent'])).toMatch(/^OpenAI\/JS /);
    expect(seen!.headers['x-stainless-retry-count']).toBe('0');
    expect(seen!.headers.host).toBe(new URL(mock.url).host);
  });

  it('maps HTTP errors: 429 with retry-after-ms / retry-after, 5xx, auth, context length and bad requests', async () => {
    const limited = await failure({
      error: {
        status: 429,
        message: 'Rate limit reached',
        code: 'rate_limit_exceeded',
        headers: { 'retry-after-ms': '1500' },
      },
    });
    expect([limited.kind, limited.opts.retryAfterMs, limited.opts.status, limited.message]).toEqual([
      'rate_limit',
      1500,
      429,
      expect.stringContaining('Rate limit reached'),
    ]);
    expect(
      (await failure({ error: { status: 429, message: 'slow', headers: { 'retry-after': '3' } } })).opts.retryAfterMs,
    ).toBe(3000);
    expect((await failure({ error: { status: 503, message: 'overloaded' } })).kind).toBe('server');
    expect((await failure({ error: { status: 401, message: 'Incorrect API key provided' } })).kind).toBe('auth');
    expect(
      (
        await failure({
          error: {
            status: 400,
            code: 'context_length_exceeded',
            message: "This model's maximum context length is 10 tokens.",
          },
        })
      ).kind,
    ).toBe('context_length');
    expect((await failure({ error: { status: 400, message: 'bad', code: 'invalid_value' } })).kind).toBe(
      'invalid_request',
    );
    // a body that is not JSON (a proxy's page): its text is the message
    const proxy = http.createServer((_req, res) =>
      res.writeHead(502, { 'content-type': 'text/plain' }).end('upstream gone'),
    );
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const behind = new OpenAIChatModel({
      provider: 'openai',
      apiKey: 'sk-test',
      baseURL: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`,
      fetch: transport,
    });
    const plain = await failure({ text: 'x' }, {}, behind);
    proxy.close();
    expect([plain.kind, plain.opts.status, plain.message]).toEqual([
      'server',
      502,
      expect.stringContaining('upstream gone'),
    ]);
  });

  it('no headers within the client’s timeout is a timeout; an abort while waiting is aborted; a refused connection is a network error', async () => {
    const slow = () => new Promise<ReplySpec>((r) => setTimeout(() => r({ text: 'late' }), 1500));
    const timedOut = await failure(slow);
    expect([timedOut.kind, timedOut.opts.outputStarted]).toEqual(['timeout', false]);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    expect((await failure(slow, { signal: ac.signal })).kind).toBe('aborted');
    expect((await failure({ text: 'never sent' }, { signal: AbortSignal.abort() })).kind).toBe('aborted');
    const refused = new OpenAIChatModel({
      provider: 'openai',
      apiKey: 'sk-test',
      baseURL: 'http://127.0.0.1:9/v1',
      fetch: transport,
    });
    expect((await failure({ text: 'x' }, {}, refused)).kind).toBe('network');
  });
});
