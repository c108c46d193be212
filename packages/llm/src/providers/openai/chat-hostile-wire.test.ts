import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponse, startMockLlm, type MockLlmServer } from '@agentloop/testing';
import { OpenAIChatModel } from './openai-chat-model.js';
import type { ModelResponse } from '../../types.js';

/**
 * Chat Completions streams whose fields have the wrong types, replayed through the real openai SDK against a real
 * HTTP server: whatever a model sends is untrusted input (SPEC §3); the adapter reads what is well-formed and
 * drops the rest, so the response is sane and the run goes on.
 */
const sse = (...chunks: unknown[]) => chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join('') + 'data: [DONE]\n\n';
const base = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'gpt-4o-mini' };
const chunk = (delta: unknown, extra: Record<string, unknown> = {}) => ({
  ...base,
  choices: [{ index: 0, delta, finish_reason: null }],
  ...extra,
});
const end = (
  finish: unknown = 'stop',
  usage: unknown = { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7 },
) => [
  { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] },
  { ...base, choices: [], usage },
];

/** What every response must be, however hostile its stream: counts integers ≥ 0, names strings, calls well-formed. */
const expectSane = (res: ModelResponse) => expect(checkResponse(res)).toEqual([]);

describe('Chat Completions: hostile stream fields, through the real SDK', () => {
  let mock: MockLlmServer;
  let body = '';
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ rawSse: body }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  const call = (raw: string, provider: 'openai' | 'deepseek' | 'openai-compatible' = 'openai') => {
    body = raw;
    const path = provider === 'deepseek' ? 'deepseek/v1' : provider === 'openai-compatible' ? 'compat/v1' : 'v1';
    const m = new OpenAIChatModel({ provider, apiKey: 'sk-test', baseURL: `${mock.url}/${path}` });
    return m.call({
      model: { provider, name: 'gpt-4o-mini', params: {} },
      messages: [{ role: 'user', content: 'q' }],
      tools: null,
    });
  };

  it('a model name that is not a string, or absurdly long, reads as the requested one', async () => {
    for (const model of [123, { id: 'x' }, ['gpt'], true, '', 'm'.repeat(10_000)]) {
      const res = await call(
        sse({ ...chunk({ role: 'assistant', content: 'hi' }), model }, ...end().map((c) => ({ ...c, model }))),
      );
      expectSane(res);
      expect([res.model, res.message.content]).toEqual(['gpt-4o-mini', 'hi']);
    }
    // a well-formed one is still the one reported
    const ok = await call(
      sse(
        chunk({ content: 'hi' }, { model: 'gpt-4o-mini-2024-07-18' }),
        ...end().map((c) => ({ ...c, model: 'gpt-4o-mini-2024-07-18' })),
      ),
    );
    expect(ok.model).toBe('gpt-4o-mini-2024-07-18');
  });

  it('token counts of the wrong type, negative, fractional or unsafe become integers ≥ 0 (numeric strings are read)', async () => {
    const usage = {
      prompt_tokens: '120',
      completion_tokens: 7.4,
      total_tokens: 'lots',
      prompt_tokens_details: { cached_tokens: -3 },
      completion_tokens_details: { reasoning_tokens: 1e300 },
    };
    const res = await call(sse(chunk({ content: 'hi' }), ...end('stop', usage)));
    expectSane(res);
    expect(res.usage).toEqual({ promptTokens: 120, completionTokens: 8, reasoningTokens: 0, cachedTokens: 0 });
    for (const bad of [
      { prompt_tokens: { n: 1 }, completion_tokens: [3], prompt_tokens_details: 'n/a', completion_tokens_details: 7 },
      { prompt_tokens: null, completion_tokens: Number.MAX_SAFE_INTEGER + 2, prompt_cache_hit_tokens: '9x' },
    ]) {
      const r = await call(sse(chunk({ content: 'hi' }), ...end('stop', bad)));
      expectSane(r);
      expect(r.usage).toEqual({ promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cachedTokens: 0 });
    }
    // usage that is not an object is no usage (the finish_reason still completes the stream)
    const none = await call(sse(chunk({ content: 'hi' }), ...end('stop', 'n/a')));
    expectSane(none);
    expect([none.message.content, none.usage]).toEqual([
      'hi',
      { promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cachedTokens: 0 },
    ]);
    // DeepSeek's cache field, as a string, on the DeepSeek route
    const ds = await call(
      sse(
        chunk({ content: 'hi' }),
        ...end('stop', { prompt_tokens: 10, completion_tokens: 1, prompt_cache_hit_tokens: '4' }),
      ),
      'deepseek',
    );
    expect(ds.usage).toEqual({ promptTokens: 10, completionTokens: 1, reasoningTokens: 0, cachedTokens: 4 });
  });

  it('a tool-call name that is not a string is dropped (the call is kept, unnamed: the loop answers unknown_tool)', async () => {
    const res = await call(
      sse(
        chunk({ tool_calls: [{ index: 0, id: 'call_a', type: 'function', function: { name: 7, arguments: '' } }] }),
        chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city":"Paris"}' } }] }),
        chunk({
          tool_calls: [
            { index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: '{"city":' } },
          ],
        }),
        chunk({ tool_calls: [{ index: 1, function: { name: { x: 1 }, arguments: '"Rome"}' } }] }),
        ...end('tool_calls'),
      ),
    );
    expectSane(res);
    expect(res.message.toolCalls).toEqual([
      { id: 'call_a', name: '_unnamed', arguments: '{"city":"Paris"}' },
      { id: 'call_b', name: 'weather', arguments: '{"city":"Rome"}' },
    ]);
    expect(res.finishReason).toBe('tool_calls');
  });

  it('arguments sent as a JSON object are read as its JSON text; other non-strings as theirs (answered invalid_arguments)', async () => {
    const res = await call(
      sse(
        chunk({
          tool_calls: [
            { index: 0, id: 'call_a', type: 'function', function: { name: 'weather', arguments: { city: 'Paris' } } },
          ],
        }),
        chunk({
          tool_calls: [{ index: 1, id: 'call_b', type: 'function', function: { name: 'weather', arguments: 42 } }],
        }),
        chunk({
          tool_calls: [{ index: 2, id: 'call_c', type: 'function', function: { name: 'weather', arguments: null } }],
        }),
        ...end('tool_calls'),
      ),
      'openai-compatible',
    );
    expectSane(res);
    expect(res.message.toolCalls!.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['call_a', 'weather', '{"city":"Paris"}'],
      ['call_b', 'weather', '42'],
      ['call_c', 'weather', '{}'],
    ]);
  });

  it('ids, indexes and fragments of the wrong shape: a numeric id is its text, a bad index reads as absent, junk entries are skipped', async () => {
    const res = await call(
      sse(
        chunk({
          tool_calls: [null, 'x', 5, { index: 0, id: 99, type: 'function', function: { name: 'a', arguments: '{}' } }],
        }),
        chunk({ tool_calls: [{ index: 'one', id: 'call_b', function: { name: 'b', arguments: '{"k":1}' } }] }),
        chunk({ tool_calls: [{ index: -1, function: 'nope' }] }),
        chunk({ tool_calls: { index: 0, function: { name: 'c' } } }),
        ...end('tool_calls'),
      ),
    );
    expectSane(res);
    expect(res.message.toolCalls!.map((c) => [c.id, c.name, c.arguments])).toEqual([
      ['99', 'a', '{}'],
      ['call_b', 'b', '{"k":1}'],
    ]);
  });

  it('chunks, choices and deltas that are not objects are skipped; text of the wrong type is dropped, text parts are read', async () => {
    const res = await call(
      sse(
        null,
        42,
        'text',
        [1, 2],
        { ...base, choices: 'many' },
        { ...base, choices: [null] },
        { ...base, choices: [{ index: 0, delta: 'hi' }] },
        chunk({ content: 'Hello' }),
        chunk({ content: 17, reasoning_content: { t: 1 }, refusal: ['no'] }),
        chunk({
          content: [
            { type: 'text', text: ', world' },
            { type: 'image_url', image_url: 'x' },
            5,
            { type: 'text', text: 3 },
          ],
        }),
        ...end(3), // a finish_reason of the wrong type still ends the response (as other)
      ),
      'deepseek',
    );
    expectSane(res);
    expect(res.message.content).toBe('Hello, world');
    expect(res.message.reasoning).toBeUndefined();
    expect(res.finishReason).toBe('other');
  });
});
