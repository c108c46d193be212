import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  listFixtures,
  openAIFixtureChunks,
  openAIFixtureSse,
  startMockLlm,
  type MockLlmServer,
} from '@agentloop/testing';
import { OpenAIChatModel } from './openai-chat-model.js';
import { nodeFetch } from '../node-fetch.js';

/** An independent reading of a recorded stream: what the canonical message must hold. */
function expected(chunks: Array<Record<string, any>>) {
  let text = '';
  let reasoning = '';
  const calls = new Map<number, { id: string; name: string; args: string }>();
  let usage: Record<string, any> | null = null;
  for (const c of chunks) {
    if (c.usage) usage = c.usage;
    const d = c.choices?.[0]?.delta;
    if (!d) continue;
    if (typeof d.content === 'string') text += d.content;
    if (typeof d.reasoning_content === 'string') reasoning += d.reasoning_content;
    for (const tc of d.tool_calls ?? []) {
      const cur = calls.get(tc.index) ?? { id: '', name: '', args: '' };
      if (tc.id) cur.id = tc.id;
      if (tc.function?.name) cur.name = tc.function.name;
      if (tc.function?.arguments) cur.args += tc.function.arguments;
      calls.set(tc.index, cur);
    }
  }
  return { text, reasoning, calls: [...calls.entries()].sort(([a], [b]) => a - b).map(([, c]) => c), usage };
}

const FIXTURES = [
  ...listFixtures('openai', ['.chunks.txt', '.bin']),
  ...listFixtures('deepseek', ['.chunks.txt']),
  ...listFixtures('openai-compatible', ['.chunks.txt', '.sse']),
];

describe('recorded OpenAI-family streams replay through the real openai SDK', () => {
  let mock: MockLlmServer;
  let current = '';
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => ({ rawSse: openAIFixtureSse(current) }) });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('covers every recorded stream', () => {
    expect(FIXTURES.length).toBeGreaterThanOrEqual(17);
  });

  // both transports the SDK may run on: global fetch, and the node:http fetch the registry gives it
  for (const [transport, fetchImpl] of [
    ['global fetch', undefined],
    ['nodeFetch', nodeFetch],
  ] as const)
    for (const file of FIXTURES) {
      it(`${file} (${transport})`, async () => {
        current = file;
        const provider = file.startsWith('deepseek') ? 'deepseek' : 'openai';
        const model = new OpenAIChatModel({
          provider,
          apiKey: 'sk-test',
          baseURL: `${mock.url}/${provider === 'deepseek' ? 'deepseek/v1' : 'v1'}`,
          fetch: fetchImpl,
        });
        const deltas: string[] = [];
        const reasoningDeltas: string[] = [];
        const res = await model.call({
          model: { provider, name: 'replay', params: {} },
          messages: [{ role: 'user', content: 'replay' }],
          tools: null,
          onTextDelta: (t) => deltas.push(t),
          onReasoningDelta: (t) => reasoningDeltas.push(t),
        });
        const want = expected(openAIFixtureChunks(file));
        expect(res.message.role).toBe('assistant');
        expect(res.message.content ?? '').toBe(want.text);
        expect(deltas.join('')).toBe(want.text);
        expect(res.message.reasoning ?? '').toBe(want.reasoning);
        expect(reasoningDeltas.join('')).toBe(want.reasoning);
        expect((res.message.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, args: c.arguments }))).toEqual(
          want.calls,
        );
        for (const c of res.message.toolCalls ?? []) expect(() => JSON.parse(c.arguments)).not.toThrow();
        if (want.calls.length) expect(res.finishReason).toBe('tool_calls');
        if (want.usage) {
          expect(res.usage.promptTokens).toBe(want.usage.prompt_tokens);
          expect(res.usage.completionTokens).toBe(want.usage.completion_tokens);
          expect(res.usage.reasoningTokens).toBe(want.usage.completion_tokens_details?.reasoning_tokens ?? 0);
        }
      });
    }

  it('reads known values out of specific recordings', async () => {
    const call = async (file: string, provider: 'openai' | 'deepseek' = 'openai') => {
      current = file;
      const m = new OpenAIChatModel({
        provider,
        apiKey: 'k',
        baseURL: `${mock.url}/${provider === 'deepseek' ? 'deepseek/v1' : 'v1'}`,
      });
      return m.call({
        model: { provider, name: 'x', params: {} },
        messages: [{ role: 'user', content: 'q' }],
        tools: null,
      });
    };
    const edinburgh = await call('openai/24aaf30663f9a568a0e77970b4fd3deafe041da94d541071009596234d8c84a6.bin');
    expect(JSON.parse(edinburgh.message.toolCalls![0]!.arguments)).toEqual({
      city: 'Edinburgh',
      country: 'GB',
      units: 'c',
    });
    const parallel = await call('openai/453df473e96274dd8ab61ab4d13dfcc25dc2f57a5e05eb5cc46c70b51d8845c2.bin');
    expect(parallel.message.toolCalls!.map((c) => c.name)).toEqual(['GetWeatherArgs', 'get_stock_price']);
    const ds = await call('deepseek/deepseek-tool-call.chunks.txt', 'deepseek');
    expect(ds.message.toolCalls![0]!.name).toBe('weather');
    expect(ds.message.reasoning!.length).toBeGreaterThan(10);
    const cut = await call('deepseek/issue-19381-thinking-reasoning.chunks.txt', 'deepseek');
    expect(cut.finishReason).toBe('length');
    const xai = await call('openai-compatible/xai-tool-call.chunks.txt');
    expect(xai.message.toolCalls).toHaveLength(1);
  });
});
