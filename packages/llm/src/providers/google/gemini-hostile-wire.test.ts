import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkResponse, startMockLlm, type MockLlmServer } from '@agentloop/testing';
import { GeminiModel } from './gemini-model.js';
import type { ModelCallRequest, ModelResponse } from '../../types.js';

/**
 * Gemini streams whose fields have the wrong types, replayed through the real @google/genai against a real HTTP
 * server: whatever a model sends is untrusted input (SPEC §3); the adapter reads what is well-formed and drops the
 * rest, so the response is sane and the run goes on. And a run's `model.params` of the wrong type never throw.
 */
const sse = (...events: unknown[]) => events.map((e) => `data: ${JSON.stringify(e)}\r\n\r\n`).join('');
const text = (t: string, extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: 'model', parts: [{ text: t }] }, index: 0 }],
  modelVersion: 'gemini-2.5-flash',
  ...extra,
});
const done = (
  usageMetadata: unknown = { promptTokenCount: 5, candidatesTokenCount: 2, totalTokenCount: 7 },
  extra: Record<string, unknown> = {},
) => ({
  candidates: [{ content: { role: 'model', parts: [{ text: '' }] }, finishReason: 'STOP', index: 0 }],
  usageMetadata,
  modelVersion: 'gemini-2.5-flash',
  ...extra,
});
const calls = (parts: unknown[], extra: Record<string, unknown> = {}) => ({
  candidates: [{ content: { role: 'model', parts }, finishReason: 'STOP', index: 0 }],
  modelVersion: 'gemini-2.5-flash',
  ...extra,
});

const expectSane = (res: ModelResponse) => expect(checkResponse(res, { argumentsJson: true })).toEqual([]);

describe('Gemini: hostile stream fields, through the real SDK', () => {
  let mock: MockLlmServer;
  let body = '';
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ rawSse: body }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  const tools = [
    { name: 'weather', description: 'w', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  ];
  const call = (raw: string, over: Partial<ModelCallRequest> = {}) => {
    body = raw;
    return new GeminiModel({ apiKey: 'k', baseUrl: mock.url }).call({
      model: { provider: 'google', name: 'gemini-2.5-flash', params: {} },
      messages: [{ role: 'user', content: 'q' }],
      tools,
      ...over,
    });
  };

  it('a modelVersion that is not a string, or absurdly long, reads as the requested model', async () => {
    for (const modelVersion of [123, { v: 1 }, ['x'], true, 'g'.repeat(10_000)]) {
      const res = await call(sse(text('hi', { modelVersion }), done(undefined, { modelVersion })));
      expectSane(res);
      expect([res.model, res.message.content]).toEqual(['gemini-2.5-flash', 'hi']);
    }
    const ok = await call(
      sse(
        text('hi', { modelVersion: 'gemini-2.5-flash-001' }),
        done(undefined, { modelVersion: 'gemini-2.5-flash-001' }),
      ),
    );
    expect(ok.model).toBe('gemini-2.5-flash-001');
  });

  it('token counts of the wrong type, negative, fractional or unsafe become integers ≥ 0 (numeric strings are read)', async () => {
    const res = await call(
      sse(
        text('hi'),
        done({
          promptTokenCount: '120',
          candidatesTokenCount: 7.4,
          thoughtsTokenCount: -3,
          cachedContentTokenCount: 1e300,
        }),
      ),
    );
    expectSane(res);
    expect(res.usage).toEqual({ promptTokens: 120, completionTokens: 8, reasoningTokens: 0, cachedTokens: 0 });
    const junk = await call(
      sse(
        text('hi'),
        done({
          promptTokenCount: { n: 1 },
          candidatesTokenCount: [3],
          thoughtsTokenCount: 'many',
          cachedContentTokenCount: null,
        }),
      ),
    );
    expectSane(junk);
    expect(junk.usage).toEqual({ promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cachedTokens: 0 });
    // usageMetadata that is a list is no usage (one that is a number or a string throws inside @google/genai 3.3's
    // continuation layer, before the adapter sees the chunk)
    const list = await call(sse(text('hi'), done([1, 2])));
    expect([list.message.content, list.usage]).toEqual([
      'hi',
      { promptTokens: 0, completionTokens: 0, reasoningTokens: 0, cachedTokens: 0 },
    ]);
    // string + number must not concatenate: candidates and thoughts are added as numbers
    const sum = await call(
      sse(text('hi'), done({ promptTokenCount: 4, candidatesTokenCount: '2', thoughtsTokenCount: 3 })),
    );
    expect(sum.usage).toEqual({ promptTokens: 4, completionTokens: 5, reasoningTokens: 3, cachedTokens: 0 });
  });

  it('a function-call name that is not a string reads as unnamed; args that are not an object make the call malformed; a numeric id is its text', async () => {
    const res = await call(
      sse(
        calls([
          { functionCall: { name: 7, args: { city: 'Paris' } } },
          { functionCall: { name: 'weather', args: 'city=Rome', id: 42 } },
          { functionCall: { name: 'weather', args: ['Oslo'] }, thoughtSignature: 17 },
          { functionCall: { name: 'weather', args: { city: 'Lima' }, partialArgs: 'nope', willContinue: 'yes' } },
        ]),
        done(),
      ),
    );
    expectSane(res);
    const got = res.message.toolCalls!.map((c) => ({
      id: c.id,
      name: c.name,
      args: JSON.parse(c.arguments),
      malformed: c.providerData?.malformed,
    }));
    expect(got).toEqual([
      { id: expect.stringMatching(/^call_/), name: '_unnamed', args: { city: 'Paris' }, malformed: undefined },
      { id: '42', name: 'weather', args: {}, malformed: expect.any(String) },
      { id: expect.stringMatching(/^call_/), name: 'weather', args: {}, malformed: expect.any(String) },
      { id: expect.stringMatching(/^call_/), name: 'weather', args: { city: 'Lima' }, malformed: undefined },
    ]);
    expect(res.message.toolCalls![2]!.providerData?.thoughtSignature).toBeUndefined();
    expect(res.finishReason).toBe('tool_calls');
  });

  it('streamed partial arguments of the wrong shape are skipped, the rest applied', async () => {
    const res = await call(
      sse(
        calls([{ functionCall: { name: 'weather', willContinue: true } }]),
        calls([
          {
            functionCall: {
              partialArgs: [
                null,
                5,
                { jsonPath: 7, stringValue: 'x' },
                { jsonPath: '$.city', stringValue: 'Par', willContinue: true },
              ],
              willContinue: true,
            },
          },
        ]),
        calls([
          {
            functionCall: {
              partialArgs: [
                { jsonPath: '$.city', stringValue: 'is' },
                { jsonPath: '$.n', numberValue: 'two' },
                { jsonPath: '$.ok', boolValue: true },
              ],
            },
          },
        ]),
        done(),
      ),
    );
    expectSane(res);
    expect(res.message.toolCalls!.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['weather', { city: 'Paris', n: null, ok: true }],
    ]);
  });

  it('candidates, content and parts of the wrong shape are skipped; text of the wrong type is dropped', async () => {
    const res = await call(
      sse(
        { candidates: 'many' },
        { candidates: [null] },
        { candidates: [{ content: 'hi' }] },
        { candidates: [{ content: { parts: { text: 'x' } } }] },
        { candidates: [{ content: { parts: [null, 5, { text: 42 }, { text: 'Hello', thought: 'no' }] } }] },
        text(', world'),
        { ...done(), candidates: [{ content: { parts: [] }, finishReason: 9, index: 0 }] }, // a finishReason of the wrong type: other
      ),
    );
    expectSane(res);
    expect(res.message.content).toBe('Hello, world');
    expect(res.finishReason).toBe('other');
  });
});

describe('Gemini: model.params of the wrong type never throw', () => {
  let mock: MockLlmServer;
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ text: 'fine' }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  const call = (params: Record<string, unknown>, stop?: string[]) =>
    new GeminiModel({ apiKey: 'k', baseUrl: mock.url }).call({
      model: { provider: 'google', name: 'gemini-2.5-flash', params },
      messages: [{ role: 'user', content: 'q' }],
      tools: null,
      ...(stop ? { stop } : {}),
    });

  it('stopSequences that is not a list of strings, with the ReAct stop sequences: the loop’s own are sent, the bad value ignored', async () => {
    for (const stopSequences of [5, { a: 1 }, true, [1, null, 'END']]) {
      const res = await call({ stopSequences }, ['\nObservation:']);
      expect(res.message.content).toBe('fine');
      const sent = mock.requests.at(-1)!.body.generationConfig as { stopSequences?: unknown };
      expect(sent.stopSequences).toEqual(Array.isArray(stopSequences) ? ['\nObservation:', 'END'] : ['\nObservation:']);
    }
    // a single string is one stop sequence
    await call({ stopSequences: 'END' }, ['\nObservation:']);
    expect((mock.requests.at(-1)!.body.generationConfig as { stopSequences?: unknown }).stopSequences).toEqual([
      '\nObservation:',
      'END',
    ]);
  });

  it('known generation settings of the wrong type are not sent (safetySettings the SDK would refuse included); well-typed ones are', async () => {
    const res = await call({
      temperature: 'hot',
      topK: 3,
      maxOutputTokens: 12.5,
      stopSequences: 5,
      safetySettings: [
        { category: 'HARM_CATEGORY_HATE_SPEECH', threshold: 'BLOCK_NONE', method: 'SEVERITY' },
        null,
        'x',
      ],
      thinkingConfig: 'deep',
      responseModalities: 'TEXT',
    });
    expect(res.message.content).toBe('fine');
    const sent = mock.requests.at(-1)!.body;
    expect(sent.generationConfig).toEqual({ topK: 3 });
    expect(sent.safetySettings).toEqual([{ category: 'HARM_CATEGORY_HATE_SPEECH', threshold: 'BLOCK_NONE' }]);
  });
});
