import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '@agentloop/protocol';
import {
  listResponsesFixtures,
  responsesFixtureJson,
  responsesFixtureStreams,
  startMockLlm,
  type MockLlmServer,
  type ReplySpec,
} from '@agentloop/testing';
import { OpenAIResponsesModel } from './openai-responses-model.js';
import { responsesBody } from './request-body.js';
import { nodeFetch } from '../../node-fetch.js';
import { LlmError, type ModelResponse } from '../../../types.js';

type Ev = Record<string, any>;

/** An independent reading of one recorded response: what the canonical message must hold. */
function expected(events: Ev[]) {
  const done = events
    .filter((e) => e.type === 'response.output_item.done')
    .sort((a, b) => a.output_index - b.output_index)
    .map((e) => e.item);
  const streamed = new Set(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.item_id));
  let text = events
    .filter((e) => e.type === 'response.output_text.delta' || e.type === 'response.refusal.delta')
    .map((e) => e.delta)
    .join('');
  for (const m of done.filter((i) => i.type === 'message' && !streamed.has(i.id)))
    text += m.content.map((p: Ev) => p.text ?? p.refusal ?? '').join('');
  const reasoningItems = done.filter((i) => i.type === 'reasoning');
  const last = events.at(-1)!;
  return {
    text,
    reasoning: reasoningItems.flatMap((r) => r.summary.map((s: Ev) => s.text)).join('\n\n'),
    calls: done
      .filter((i) => i.type === 'function_call')
      .map((i) => ({ id: i.call_id, name: i.name, arguments: i.arguments })),
    kept: reasoningItems.filter((r) => r.encrypted_content),
    terminal: ['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(last.type)
      ? last
      : null,
    model: events[0]!.response?.model as string,
  };
}

const STREAMS = listResponsesFixtures('.chunks.txt').flatMap((file) =>
  responsesFixtureStreams(file).map((s, i, all) => ({ name: all.length > 1 ? `${file} #${i + 1}` : file, ...s })),
);

describe('recorded Responses API streams replay through the real openai SDK and our adapter', () => {
  let mock: MockLlmServer;
  let reply: ReplySpec = {};
  beforeAll(async () => {
    mock = await startMockLlm({ script: () => reply });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('covers every recording', () => {
    expect(listResponsesFixtures('.chunks.txt').length).toBeGreaterThanOrEqual(12);
    expect(STREAMS.length).toBeGreaterThanOrEqual(18);
  });

  const replay = async (s: (typeof STREAMS)[number], fetchImpl?: typeof fetch) => {
    reply = { rawSse: s.sse };
    const model = new OpenAIResponsesModel({
      apiKey: 'sk-test',
      baseURL: `${mock.url}/v1`,
      ...(fetchImpl ? { fetch: fetchImpl } : {}),
    });
    const text: string[] = [];
    const reasoning: string[] = [];
    const name = expected(s.events).model ?? 'gpt-4o-mini';
    const run = model.call({
      model: { provider: 'openai', name, params: {} },
      messages: [{ role: 'user', content: 'replay' }],
      tools: null,
      onTextDelta: (t) => text.push(t),
      onReasoningDelta: (t) => reasoning.push(t),
    });
    return { run, text, reasoning };
  };

  for (const [transport, fetchImpl] of [
    ['global fetch', undefined],
    ['nodeFetch', nodeFetch],
  ] as const)
    for (const s of STREAMS)
      it(`${s.name} (${transport})`, async () => {
        const want = expected(s.events);
        const { run, text, reasoning } = await replay(s, fetchImpl);
        const t = want.terminal;
        if (!t || t.type === 'error' || t.type === 'response.failed') {
          const err = (await run.then(
            () => null,
            (e: unknown) => e,
          )) as LlmError;
          expect(err).toBeInstanceOf(LlmError);
          if (!t) return expect(err.kind).toBe('network'); // a stream that never ended is no answer
          const code = t.type === 'error' ? (t.error?.code ?? t.code) : t.response.error.code;
          expect(err.kind).toBe(/quota|rate_limit/.test(code) ? 'rate_limit' : 'server');
          return;
        }
        const res: ModelResponse = await run;
        expect(res.message.content ?? '').toBe(want.text);
        expect(text.join('')).toBe(want.text);
        expect(res.message.reasoning ?? '').toBe(want.reasoning);
        expect(reasoning.join('')).toBe(want.reasoning);
        expect((res.message.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments }))).toEqual(
          want.calls,
        );
        expect(res.finishReason).toBe(
          want.calls.length ? 'tool_calls' : t.type === 'response.incomplete' ? 'length' : 'stop',
        );
        // reasoning items are kept exactly as recorded (keys in their order, encrypted content unchanged)
        expect(JSON.stringify(res.message.providerData?.openaiReasoning ?? [])).toBe(JSON.stringify(want.kept));
        const u = t.response.usage;
        expect(res.usage).toEqual({
          promptTokens: u.input_tokens,
          completionTokens: u.output_tokens,
          reasoningTokens: u.output_tokens_details.reasoning_tokens,
          cachedTokens: u.input_tokens_details.cached_tokens,
        });
        expect(res.model).toBe(t.response.model);
      });

  it('reads known values out of specific recordings', async () => {
    const one = async (file: string, i = 0) =>
      (await replay(responsesFixtureStreams(file)[i]! as (typeof STREAMS)[number])).run;
    const calc = await one('openai-reasoning-encrypted-content.1.chunks.txt');
    expect(calc.message.toolCalls!.map((c) => [c.id, c.name, JSON.parse(c.arguments)])).toEqual([
      ['call_AB6AaRZ1FYZB2RwS6A5vbdqn', 'calculator', { a: 12, b: 7, op: 'add' }],
    ]);
    expect(calc.message.reasoning).toMatch(/^\*\*Calculating step-by-step using calculator\*\*/);
    expect((await one('openai-reasoning-encrypted-content.1.chunks.txt', 3)).message.content).toBe(
      'The final result is **570**.',
    );
    const cached = await one('openai-phase.1.chunks.txt');
    expect([cached.usage.cachedTokens, cached.usage.reasoningTokens]).toEqual([3072, 64]);
    expect((await one('issue-16021-openai-zod-patterns-live.chunks.txt')).usage.cachedTokens).toBe(14080);
    const multi = await one('azure-gpt5-reasoning-multi-summary-with-encryption.chunks.txt');
    expect(multi.message.reasoning!.split('\n\n').length).toBeGreaterThanOrEqual(6);
  });

  it('the next request carries a recorded reasoning item back byte for byte, in front of its call, with both ids', async () => {
    const [first] = responsesFixtureStreams('openai-issue-11239.1.chunks.txt');
    const res = await (await replay(first! as (typeof STREAMS)[number])).run;
    const recorded = first!.events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    const message: Message = {
      ...res.message,
      providerData: { ...res.message.providerData, provider: 'openai', model: res.model },
    };
    const call = res.message.toolCalls![0]!;
    const body = responsesBody({
      model: { provider: 'openai', name: 'gpt-5.2', params: {} },
      messages: [
        { role: 'user', content: 'code?' },
        message,
        { role: 'tool', toolCallId: call.id, content: '{"code":"X"}' },
      ],
      tools: null,
    });
    const input = body.input as Ev[];
    expect(JSON.stringify(input[1])).toBe(JSON.stringify(recorded[0]));
    expect(input[2]).toEqual({
      type: 'function_call',
      id: recorded[1].id,
      call_id: recorded[1].call_id,
      name: recorded[1].name,
      arguments: recorded[1].arguments,
    });
    expect(input[3]).toEqual({ type: 'function_call_output', call_id: recorded[1].call_id, output: '{"code":"X"}' });
  });

  it('recorded error bodies: insufficient_quota (429) and a refused parameter (400)', async () => {
    const model = new OpenAIResponsesModel({ apiKey: 'sk-test', baseURL: `${mock.url}/v1` });
    const fail = async (status: number, body: Ev) => {
      reply = { error: { status, body } };
      return (await model
        .call({
          model: { provider: 'openai', name: 'gpt-5-nano', params: {} },
          messages: [{ role: 'user', content: 'q' }],
          tools: null,
        })
        .catch((e: unknown) => e)) as LlmError;
    };
    const quota = await fail(429, responsesFixtureJson('openai-error.1.json'));
    expect([quota.kind, quota.message]).toEqual([
      'rate_limit',
      expect.stringContaining('You exceeded your current quota'),
    ]);
    const temperature = await fail(400, responsesFixtureJson('reasoning-model-temperature-error.json'));
    expect([temperature.kind, temperature.message]).toEqual([
      'invalid_request',
      expect.stringContaining("'temperature' is not supported with this model"),
    ]);
  });

  it('the mock renders the item shapes a recorded body shows (reasoning, message, function_call)', async () => {
    const recorded = responsesFixtureJson('openai-reasoning-encrypted-content.1.json');
    const calls = responsesFixtureStreams('openai-reasoning-encrypted-content.1.chunks.txt')[0]!
      .events.filter((e) => e.type === 'response.output_item.done')
      .map((e) => e.item);
    const shapes = (items: Ev[]) => Object.fromEntries(items.map((i) => [i.type, Object.keys(i).sort()]));
    reply = { reasoning: 'r', text: 'answer', toolCalls: [{ name: 'f', args: {} }] };
    const res = await fetch(`${mock.url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gpt-5-mini', input: 'q', store: false, include: ['reasoning.encrypted_content'] }),
    });
    const body = (await res.json()) as Ev;
    expect(shapes(body.output)).toEqual({ ...shapes(recorded.output), ...shapes(calls) });
    for (const k of [
      'id',
      'object',
      'created_at',
      'status',
      'model',
      'output',
      'usage',
      'store',
      'previous_response_id',
    ])
      expect(body).toHaveProperty(k);
    expect(Object.keys(body.usage).sort()).toEqual(Object.keys(recorded.usage).sort());
  });
});
