import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { FIXTURES_DIR, googleFixtureSse, listFixtures, startMockLlm, type MockLlmServer } from '@agentloop/testing';
import { GeminiModel } from './gemini-model.js';
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
      if (part.functionCall?.name) calls.push({ name: part.functionCall.name, args: part.functionCall.args ?? {}, ...(part.thoughtSignature ? { signature: part.thoughtSignature } : {}) });
      else if (typeof part.text === 'string' && part.thought) thought += part.text;
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
      const res = await model.call({ model: { provider: 'google', name: 'gemini-3-pro-preview', params: {} }, messages: [{ role: 'user', content: 'q' }], tools: null, onTextDelta: (t) => deltas.push(t) });
      const want = expected(googleFixtureSse(file));
      expect(res.message.content ?? '').toBe(want.text);
      expect(deltas.join('')).toBe(want.text);
      expect(res.message.reasoning ?? '').toBe(want.thought);
      expect((res.message.toolCalls ?? []).map((c) => ({ name: c.name, args: JSON.parse(c.arguments), ...(c.providerData ? { signature: c.providerData.thoughtSignature } : {}) }))).toEqual(want.calls);
      for (const c of res.message.toolCalls ?? []) expect(c.id).toMatch(/^call_/);
    });
  }

  it('sends a call’s thoughtSignature back on the same functionCall part, and results as functionResponse parts', () => {
    const { contents, systemInstruction } = toGeminiContents([
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'weather?' },
      { role: 'assistant', content: null, toolCalls: [
        { id: 'a', name: 'weather', arguments: '{"city":"Paris"}', providerData: { provider: 'google', thoughtSignature: 'SIG' } },
        { id: 'b', name: 'weather', arguments: '{"city":"Tokyo"}' },
      ] },
      { role: 'tool', toolCallId: 'a', content: '{"t":20}' },
      { role: 'tool', toolCallId: 'b', content: 'sunny' },
    ]);
    expect(systemInstruction).toBe('sys');
    expect(contents[1]!.parts).toEqual([
      { functionCall: { id: 'a', name: 'weather', args: { city: 'Paris' } }, thoughtSignature: 'SIG' },
      { functionCall: { id: 'b', name: 'weather', args: { city: 'Tokyo' } } },
    ]);
    expect(contents[2]).toEqual({ role: 'user', parts: [
      { functionResponse: { id: 'a', name: 'weather', response: { t: 20 } } },
      { functionResponse: { id: 'b', name: 'weather', response: { output: 'sunny' } } },
    ] });
  });

  it('gives Gemini 3 a documented dummy signature for steps another provider produced', () => {
    const msgs = [
      { role: 'user' as const, content: 'x' },
      { role: 'assistant' as const, content: null, toolCalls: [{ id: 'a', name: 't', arguments: '{}' }, { id: 'b', name: 't', arguments: '{}' }] },
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
      { role: 'assistant', content: null, toolCalls: [{ id: 'a', name: 't', arguments: '{}', providerData: { provider: 'openai', thoughtSignature: 'NOPE' } }] },
      { role: 'tool', toolCallId: 'a', content: '{}' },
    ]);
    expect(contents[1]!.parts![0]!.thoughtSignature).toBeUndefined();
  });
});

describe('Gemini specifics against the mock Gemini API', () => {
  let mock: MockLlmServer;
  beforeAll(async () => {
    mock = await startMockLlm({ script: (req) => (req.messages.some((m) => m.content === 'unsafe') ? { text: '', finishReason: 'SAFETY' } : { text: 'ok' }) });
  });
  afterAll(async () => {
    await mock.close();
  });
  const model = () => new GeminiModel({ apiKey: 'k', baseUrl: mock.url });
  const spec = { provider: 'google' as const, name: 'gemini-3-flash', params: {} };
  const history = (signature?: string) => [
    { role: 'user' as const, content: 'weather?' },
    { role: 'assistant' as const, content: null, toolCalls: [{ id: 'a', name: 'weather', arguments: '{}', ...(signature ? { providerData: { provider: 'google', thoughtSignature: signature } } : {}) }] },
    { role: 'tool' as const, toolCallId: 'a', content: '{"t":1}' },
  ];

  it('the mock enforces Gemini 3 thought signatures with the API’s own error; our requests satisfy it', async () => {
    const raw = await fetch(`${mock.url}/v1beta/models/gemini-3-flash:streamGenerateContent?alt=sse`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'q' }] }, { role: 'model', parts: [{ functionCall: { name: 'weather', args: {} } }] }, { role: 'user', parts: [{ functionResponse: { name: 'weather', response: {} } }] }] }),
    });
    expect(raw.status).toBe(400);
    expect(((await raw.json()) as { error: { message: string } }).error.message).toContain('Function call is missing a thought_signature in functionCall parts');
    expect((await model().call({ model: spec, messages: history('SIG'), tools: null })).message.content).toBe('ok');
    expect((await model().call({ model: spec, messages: history(), tools: null })).message.content).toBe('ok'); // dummy injected
  });

  it('a SAFETY stop is a content_filter error (not retried, not fallen back from)', async () => {
    const err = await model().call({ model: spec, messages: [{ role: 'user', content: 'unsafe' }], tools: null }).catch((e) => e);
    expect(err.kind).toBe('content_filter');
    expect(err.retryable).toBe(false);
  });
});
