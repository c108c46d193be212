import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import {
  FIXTURES_DIR,
  googleFixtureSse,
  googleInteractions,
  listFixtures,
  parseGeminiRequest,
  startMockLlm,
  type MockLlmServer,
} from '@agentloop/testing';
import { GoogleGenAI } from '@google/genai';
import { GeminiModel } from './gemini-model.js';
import { LlmError } from '../../types.js';
import { toGeminiContents } from './convert-contents.js';

/** An independent reading of a recorded Gemini stream. */
function expected(sse: string) {
  let text = '';
  let thought = '';
  const calls: Array<{ name: string; args: unknown; signature?: string }> = [];
  for (const frame of sse.split(/\r?\n\r?\n/)) {
    const data = frame.replace(/^data: /, '').trim();
    if (!data) continue;
    for (const part of JSON.parse(data).candidates?.[0]?.content?.parts ?? []) {
      if (part.functionCall?.name)
        calls.push({
          name: part.functionCall.name,
          args: { ...(part.functionCall.args ?? {}) },
          ...(part.thoughtSignature ? { signature: part.thoughtSignature } : {}),
        });
      else if (part.functionCall?.partialArgs) {
        // streamed arguments: string pieces joined per (flat) path
        const args = calls[calls.length - 1]!.args as Record<string, unknown>;
        for (const p of part.functionCall.partialArgs) {
          const key = String(p.jsonPath).replace(/^\$\./, '');
          args[key] =
            typeof p.stringValue === 'string'
              ? String(args[key] ?? '') + p.stringValue
              : (p.numberValue ?? p.boolValue ?? null);
        }
      } else if (typeof part.text === 'string' && part.thought) thought += part.text;
      else if (typeof part.text === 'string') text += part.text;
    }
  }
  return { text, thought, calls };
}

const FIXTURES = listFixtures('google', ['.chunks.txt']);

describe('recorded Gemini streams replay through @google/genai', () => {
  let mock: MockLlmServer;
  let current = '';
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ rawSse: googleFixtureSse(current) }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('covers the recorded chunk streams', () => {
    expect(FIXTURES.length).toBeGreaterThanOrEqual(7);
    expect(fs.existsSync(path.join(FIXTURES_DIR, 'google'))).toBe(true);
  });

  for (const file of FIXTURES) {
    it(file, async () => {
      current = file;
      const model = new GeminiModel({ apiKey: 'k', baseUrl: mock.url });
      const deltas: string[] = [];
      const res = await model.call({
        model: { provider: 'google', name: 'gemini-3-pro-preview', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
        onTextDelta: (t) => deltas.push(t),
      });
      const want = expected(googleFixtureSse(file));
      expect(res.message.content ?? '').toBe(want.text);
      expect(deltas.join('')).toBe(want.text);
      expect(res.message.reasoning ?? '').toBe(want.thought);
      expect(
        (res.message.toolCalls ?? []).map((c) => ({
          name: c.name,
          args: JSON.parse(c.arguments),
          ...(c.providerData ? { signature: c.providerData.thoughtSignature } : {}),
        })),
      ).toEqual(want.calls);
      for (const c of res.message.toolCalls ?? []) expect(c.id).toMatch(/^call_/);
    });
  }

  it('sends a call’s thoughtSignature back on the same functionCall part, and results as functionResponse parts', () => {
    const { contents, systemInstruction } = toGeminiContents([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'weather?' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          {
            id: 'a',
            name: 'weather',
            arguments: '{"city":"Paris"}',
            providerData: { provider: 'google', thoughtSignature: 'SIG' },
          },
          { id: 'b', name: 'weather', arguments: '{"city":"Tokyo"}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', content: '{"t":20}' },
      { role: 'tool', toolCallId: 'b', content: 'sunny' },
    ]);
    expect(systemInstruction).toBe('sys');
    expect(contents[1]!.parts).toEqual([
      { functionCall: { id: 'a', name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'SIG' },
      { functionCall: { id: 'b', name: 'weather', args: { city: 'Tokyo' } } },
    ]);
    expect(contents[2]).toEqual({
      role: 'user',
      parts: [
        { functionResponse: { id: 'a', name: 'weather', response: { t: 20 } } },
        { functionResponse: { id: 'b', name: 'weather', response: { output: 'sunny' } } },
      ],
    });
  });

  it('gives Gemini 3 a documented dummy signature for steps another provider produced', () => {
    const msgs = [
      { role: 'user' as const, content: 'x' },
      {
        role: 'assistant' as const,
        content: null,
        toolCalls: [
          { id: 'a', name: 't', arguments: '{}' },
          { id: 'b', name: 't', arguments: '{}' },
        ],
      },
      { role: 'tool' as const, toolCallId: 'a', content: '{}' },
      { role: 'tool' as const, toolCallId: 'b', content: '{}' },
    ];
    const parts = toGeminiContents(msgs, { requireSignatures: true }).contents[1]!.parts!;
    expect(parts.map((p) => p.thoughtSignature)).toEqual(['skip_thought_signature_validator', undefined]);
    expect(toGeminiContents(msgs).contents[1]!.parts![0]!.thoughtSignature).toBeUndefined();
  });

  it('never sends another provider’s data to Gemini', () => {
    const { contents } = toGeminiContents([
      { role: 'user', content: 'x' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [
          { id: 'a', name: 't', arguments: '{}', providerData: { provider: 'openai', thoughtSignature: 'NOPE' } },
        ],
      },
      { role: 'tool', toolCallId: 'a', content: '{}' },
    ]);
    expect(contents[1]!.parts![0]!.thoughtSignature).toBeUndefined();
  });
});

/** An independent reading of js-genai recorded events: whole calls, or streamed partialArgs joined per path. */
function expectedFromEvents(sse: string) {
  let text = '';
  const calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  for (const frame of sse.split('\r\n\r\n')) {
    if (!frame.trim()) continue;
    for (const part of JSON.parse(frame.slice('data: '.length)).candidates?.[0]?.content?.parts ?? []) {
      const fc = part.functionCall;
      if (fc?.name) calls.push({ name: fc.name, args: { ...(fc.args ?? {}) } });
      else if (fc?.partialArgs) {
        const args = calls[calls.length - 1]!.args;
        for (const p of fc.partialArgs) {
          const key = String(p.jsonPath).replace(/^\$\./, '');
          args[key] =
            typeof p.stringValue === 'string'
              ? String(args[key] ?? '') + p.stringValue
              : (p.numberValue ?? p.boolValue ?? null);
        }
      } else if (typeof part.text === 'string' && !part.thought) text += part.text;
    }
  }
  return { text, calls };
}

const stripIds = (v: unknown): unknown =>
  Array.isArray(v)
    ? v.map(stripIds)
    : v && typeof v === 'object'
      ? Object.fromEntries(
          Object.entries(v)
            .filter(([k]) => k !== 'id')
            .map(([k, x]) => [k, stripIds(x)]),
        )
      : v;

describe('js-genai recordings (interactions[]) replay through @google/genai', () => {
  const RECORDINGS = listFixtures('google', ['.json']).filter(
    (f) => 'interactions' in JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, f), 'utf8')),
  );
  let mock: MockLlmServer;
  let serve = '';
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ rawSse: serve }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('finds the three recordings', () => expect(RECORDINGS.length).toBe(3));

  for (const file of RECORDINGS) {
    it(file, async () => {
      const model = new GeminiModel({ apiKey: 'k', baseUrl: mock.url });
      for (const interaction of googleInteractions(file)) {
        serve = interaction.sse;
        const recorded = interaction.request as {
          contents: unknown[];
          tools?: Array<{
            functionDeclarations: Array<{
              name: string;
              description: string;
              parameters?: object;
              parametersJsonSchema?: object;
            }>;
          }>;
        };
        const { messages } = parseGeminiRequest(recorded, 'gemini-2.5-pro');
        const tools = (recorded.tools ?? [])
          .flatMap((t) => t.functionDeclarations)
          .map((d) => ({
            name: d.name,
            description: d.description,
            parameters: (d.parametersJsonSchema ?? d.parameters) as Record<string, unknown>,
          }));
        const deltas: string[] = [];
        const res = await model.call({
          model: { provider: 'google', name: 'gemini-2.5-pro', params: {} },
          messages,
          tools,
          onTextDelta: (t) => deltas.push(t),
        });
        // what we sent is what the SDK's own recording sent (ids aside: we name every call)
        expect(stripIds(mock.requests.at(-1)!.body.contents)).toEqual(recorded.contents);
        const want = expectedFromEvents(interaction.sse);
        expect(res.message.content ?? '').toBe(want.text);
        expect(deltas.join('')).toBe(want.text);
        expect((res.message.toolCalls ?? []).map((c) => ({ name: c.name, args: JSON.parse(c.arguments) }))).toEqual(
          want.calls,
        );
      }
    });
  }
});

describe('recorded non-streaming Gemini bodies, the 429 with RetryInfo and the parallel-call capture', () => {
  const BODIES = [
    'google/google-tool-call.json',
    'google/google-tool-call-gemini3.json',
    'google/google-recursive-tool-call.json',
  ];
  const read = (f: string) => JSON.parse(fs.readFileSync(path.join(FIXTURES_DIR, f), 'utf8'));
  let mock: MockLlmServer;
  let body: unknown = null;
  let error: { status: number; body: unknown } | null = null;
  beforeAll(async () => {
    mock = await startMockLlm({
      script: () => (error ? { error } : { rawJson: body, rawSse: `data: ${JSON.stringify(body)}\r\n\r\n` }),
    });
  });
  afterAll(async () => {
    await mock.close();
  });

  for (const file of BODIES) {
    it(`${file}: the SDK's generateContent, and our adapter reading it as a one-event stream`, async () => {
      body = read(file);
      error = null;
      const parts = (
        body as {
          candidates: Array<{
            content: {
              parts: Array<{ functionCall: { name: string; args: unknown; id?: string }; thoughtSignature?: string }>;
            };
          }>;
        }
      ).candidates[0]!.content.parts;
      const usage = (body as { usageMetadata: { promptTokenCount: number; thoughtsTokenCount: number } }).usageMetadata;
      const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: mock.url, apiVersion: 'v1beta' } });
      const whole = await ai.models.generateContent({ model: 'gemini-3-pro-preview', contents: 'q' });
      expect(whole.functionCalls).toEqual(parts.map((p) => p.functionCall));
      expect(whole.usageMetadata?.thoughtsTokenCount).toBe(usage.thoughtsTokenCount);
      const res = await new GeminiModel({ apiKey: 'k', baseUrl: mock.url }).call({
        model: { provider: 'google', name: 'gemini-3-pro-preview', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
      });
      expect(
        res.message.toolCalls!.map((c) => ({
          name: c.name,
          args: JSON.parse(c.arguments),
          sig: c.providerData?.thoughtSignature,
        })),
      ).toEqual(parts.map((p) => ({ name: p.functionCall.name, args: p.functionCall.args, sig: p.thoughtSignature })));
      if (parts[0]!.functionCall.id) expect(res.message.toolCalls![0]!.id).toBe(parts[0]!.functionCall.id);
      expect(res.usage).toMatchObject({
        promptTokens: usage.promptTokenCount,
        reasoningTokens: usage.thoughtsTokenCount,
      });
    });
  }

  it('google/google-429-retry-info.json: a 429 carries its RetryInfo delay (34.4 s), which defers rather than waits', async () => {
    error = { status: 429, body: read('google/google-429-retry-info.json') };
    const err = await new GeminiModel({ apiKey: 'k', baseUrl: mock.url })
      .call({
        model: { provider: 'google', name: 'gemini-2.5-flash', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
      })
      .catch((e) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err.kind).toBe('rate_limit');
    expect(err.opts.retryAfterMs).toBe(34_400);
    error = null;
  });

  it('issue-16298 capture: parallel calls keep their shape (only the first signed); a dropped signature gets the documented sentinel', () => {
    const capture = read('google/issue-16298-gemini3-parallel-tool-calls.json') as {
      toolCalls: Array<{
        toolCallId: string;
        toolName: string;
        input: unknown;
        providerMetadata: { vertex?: { thoughtSignature: string } } | null;
      }>;
    };
    const calls = capture.toolCalls.map((c) => ({
      id: c.toolCallId,
      name: c.toolName,
      arguments: JSON.stringify(c.input),
      ...(c.providerMetadata?.vertex
        ? { providerData: { provider: 'google', thoughtSignature: c.providerMetadata.vertex.thoughtSignature } }
        : {}),
    }));
    const transcript = (cs: typeof calls) => [
      { role: 'user' as const, content: 'weather in Paris and Tokyo' },
      { role: 'assistant' as const, content: null, toolCalls: cs },
      ...cs.map((c) => ({ role: 'tool' as const, toolCallId: c.id, content: '{"t":20}' })),
    ];
    const kept = toGeminiContents(transcript(calls), { requireSignatures: true }).contents[1]!.parts!;
    expect(kept.map((p) => p.thoughtSignature)).toEqual([
      capture.toolCalls[0]!.providerMetadata!.vertex!.thoughtSignature,
      undefined,
    ]);
    const dropped = toGeminiContents(transcript(calls.map(({ providerData: _p, ...c }) => c)), {
      requireSignatures: true,
    }).contents[1]!.parts!;
    expect(dropped.map((p) => p.thoughtSignature)).toEqual(['skip_thought_signature_validator', undefined]);
  });
});

describe('Gemini specifics against the mock Gemini API', () => {
  const defaultScript = (req: { messages: Array<{ content: string | null }> }) =>
    req.messages.some((m) => m.content === 'unsafe') ? { text: '', finishReason: 'SAFETY' } : { text: 'ok' };
  let mock: MockLlmServer;
  beforeAll(async () => {
    mock = await startMockLlm({ script: defaultScript });
  });
  afterEach(() => mock.setScript(defaultScript));
  afterAll(async () => {
    await mock.close();
  });
  const model = () => new GeminiModel({ apiKey: 'k', baseUrl: mock.url });
  const spec = { provider: 'google' as const, name: 'gemini-3-flash', params: {} };
  const history = (signature?: string) => [
    { role: 'user' as const, content: 'weather?' },
    {
      role: 'assistant' as const,
      content: null,
      toolCalls: [
        {
          id: 'a',
          name: 'weather',
          arguments: '{}',
          ...(signature ? { providerData: { provider: 'google', thoughtSignature: signature } } : {}),
        },
      ],
    },
    { role: 'tool' as const, toolCallId: 'a', content: '{"t":1}' },
  ];

  it('the mock enforces Gemini 3 thought signatures with the API’s own error; our requests satisfy it', async () => {
    const raw = await fetch(`${mock.url}/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        contents: [
          { role: 'user', parts: [{ text: 'q' }] },
          { role: 'model', parts: [{ functionCall: { name: 'weather', args: {} } }] },
          { role: 'user', parts: [{ functionResponse: { name: 'weather', response: {} } }] },
        ],
      }),
    });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { message: string } }).error.message).toContain(
      'Function call is missing a thought_signature in functionCall parts',
    );
    expect((await model().call({ model: spec, messages: history('SIG'), tools: null })).message.content).toBe('ok');
    expect((await model().call({ model: spec, messages: history(), tools: null })).message.content).toBe('ok'); // dummy injected
  });

  it('MALFORMED_FUNCTION_CALL is asked again once; twice in a row becomes a call marked malformed, both billed', async () => {
    const malformed = {
      finishReason: 'MALFORMED_FUNCTION_CALL',
      finishMessage: 'Malformed function call: print(default_api.weather(city=Paris))',
    };
    let n = 0;
    mock.setScript(() => (n++ === 0 ? malformed : { toolCalls: [{ name: 'weather', args: { city: 'Paris' } }] }));
    const once = await model().call({
      model: spec,
      messages: [{ role: 'user', content: 'w' }],
      tools: [{ name: 'weather', description: '', parameters: {} }],
    });
    expect(n).toBe(2);
    expect(once.message.toolCalls?.map((c) => [c.name, c.arguments, c.providerData?.malformed])).toEqual([
      ['weather', '{"city":"Paris"}', undefined],
    ]);
    mock.setScript(() => malformed);
    const before = mock.requests.length;
    const twice = await model().call({
      model: spec,
      messages: [{ role: 'user', content: 'w' }],
      tools: [{ name: 'weather', description: '', parameters: {} }],
    });
    expect(mock.requests.length - before).toBe(2);
    expect(twice.finishReason).toBe('tool_calls');
    expect(twice.message.toolCalls).toHaveLength(1);
    expect(twice.message.toolCalls![0]!.name).toBe('weather');
    expect(twice.message.toolCalls![0]!.providerData?.malformed).toContain('MALFORMED_FUNCTION_CALL'); // the SDK drops finishMessage on the Gemini API
    mock.setScript(() => ({ text: 'x' }));
    const single = await model().call({
      model: spec,
      messages: [{ role: 'user', content: 'w' }],
      tools: [{ name: 'weather', description: '', parameters: {} }],
    });
    expect(twice.usage.promptTokens).toBe(2 * single.usage.promptTokens);
    // the synthesized call goes back to Gemini 3 with the documented dummy signature, accepted by the strict mock
    mock.setScript(() => ({ text: 'ok' }));
    const next = await model().call({
      model: spec,
      tools: null,
      messages: [
        { role: 'user', content: 'w' },
        twice.message,
        { role: 'tool', toolCallId: twice.message.toolCalls![0]!.id, content: '{"error":"invalid_arguments"}' },
      ],
    });
    expect(next.message.content).toBe('ok');
  });

  it('a call that outlives its timeout is a retryable timeout, not the caller’s abort', async () => {
    mock.setScript(() => ({ text: 'slow answer in many pieces', chunking: 'fine', delayMs: 40 }));
    const slow = new GeminiModel({ apiKey: 'k', baseUrl: mock.url, timeoutMs: 50 });
    const err = await slow
      .call({ model: spec, messages: [{ role: 'user', content: 'q' }], tools: null })
      .catch((e) => e);
    expect(err).toBeInstanceOf(LlmError);
    expect(err.kind).toBe('timeout');
    expect(err.retryable).toBe(true);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 30);
    const aborted = await model()
      .call({ model: spec, messages: [{ role: 'user', content: 'q' }], tools: null, signal: ac.signal })
      .catch((e) => e);
    expect(aborted.kind).toBe('aborted');
  });

  it('serves :generateContent as one JSON response (the SDK’s non-streaming call)', async () => {
    mock.setScript(() => ({ text: 'whole', toolCalls: [{ name: 't', args: { a: 1 } }] }));
    const ai = new GoogleGenAI({ apiKey: 'k', httpOptions: { baseUrl: mock.url, apiVersion: 'v1beta' } });
    const res = await ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'q' });
    expect(res.text).toBe('whole');
    expect(res.functionCalls).toEqual([{ name: 't', args: { a: 1 } }]);
    expect(mock.requests.at(-1)!.stream).toBe(false);
  });

  it('a SAFETY stop is a content_filter error (not retried, not fallen back from)', async () => {
    const err = await model()
      .call({ model: spec, messages: [{ role: 'user', content: 'unsafe' }], tools: null })
      .catch((e) => e);
    expect(err.kind).toBe('content_filter');
    expect(err.retryable).toBe(false);
  });
});
