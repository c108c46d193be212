import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { RESPONSES_ERRORS } from './responses-wire.js';
import { startMockLlm, type MockLlmServer } from './server.js';
import type { ReplySpec } from './types.js';

type Ev = Record<string, any>;

describe('mock Responses API: the real event sequence, strict like the real API', () => {
  let mock: MockLlmServer;
  let client: OpenAI;
  let reply: ReplySpec = { text: 'hello' };
  beforeAll(async () => {
    mock = await startMockLlm({ contextWindows: { tiny: 50 }, script: () => reply });
    client = new OpenAI({ apiKey: 'k', baseURL: `${mock.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await mock.close();
  });
  beforeEach(() => {
    reply = { text: 'hello' };
  });

  const stream = async (body: Record<string, unknown>): Promise<Ev[]> => {
    const s = await client.responses.create({
      model: 'gpt-4o-mini',
      input: 'hi',
      store: false,
      ...body,
      stream: true,
    } as OpenAI.Responses.ResponseCreateParamsStreaming);
    const out: Ev[] = [];
    for await (const e of s) out.push(e as Ev);
    return out;
  };
  const fail = (body: Record<string, unknown>) =>
    client.responses
      .create({ model: 'gpt-4o-mini', store: false, ...body } as OpenAI.Responses.ResponseCreateParamsNonStreaming)
      .catch((e) => e);

  it('streams text with the real event sequence and numbered events, usage with cached and reasoning tokens', async () => {
    reply = { text: 'hello there', chunking: 'fine', usage: { prompt: 40, cached: 32 } };
    const events = await stream({});
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.content_part.added',
    ]);
    expect(types.slice(-4)).toEqual([
      'response.output_text.done',
      'response.content_part.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_, i) => i));
    expect(
      events
        .filter((e) => e.type === 'response.output_text.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('hello there');
    expect(events.filter((e) => e.type === 'response.output_text.delta').length).toBeGreaterThan(1);
    const done = events.at(-1)!.response;
    expect(done.usage).toMatchObject({
      input_tokens: 40,
      input_tokens_details: { cached_tokens: 32 },
      output_tokens_details: { reasoning_tokens: 0 },
    });
    expect(done.output[0]).toMatchObject({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'hello there' }],
    });
  });

  it('streams parallel function calls by output_index, and interleaves their argument deltas when asked', async () => {
    reply = {
      toolCalls: [
        { name: 'a', args: { x: 1 } },
        { name: 'b', args: { y: 'two' } },
      ],
      chunking: 'interleaved',
    };
    const events = await stream({
      tools: [
        { type: 'function', name: 'a', parameters: {}, strict: false },
        { type: 'function', name: 'b', parameters: {}, strict: false },
      ],
    });
    const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
    expect(new Set(deltas.slice(0, 2).map((d) => d.output_index))).toEqual(new Set([0, 1])); // alternating
    const byIndex = (i: number) =>
      deltas
        .filter((d) => d.output_index === i)
        .map((d) => d.delta)
        .join('');
    expect(JSON.parse(byIndex(0))).toEqual({ x: 1 });
    expect(JSON.parse(byIndex(1))).toEqual({ y: 'two' });
    const items = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    expect(items.map((i) => [i.type, i.name])).toEqual([
      ['function_call', 'a'],
      ['function_call', 'b'],
    ]);
    expect(items.every((i) => /^fc_/.test(i.id) && /^call_/.test(i.call_id))).toBe(true);
    expect(mock.requests.at(-1)!.tools).toEqual(['a', 'b']);
  });

  it('gives a reasoning model a reasoning item with summary deltas and opaque encrypted content it remembers', async () => {
    reply = { reasoning: 'First part.\n\nSecond part.', toolCalls: [{ name: 'a', args: {} }] };
    const events = await stream({
      model: 'gpt-5-mini',
      include: ['reasoning.encrypted_content'],
      tools: [{ type: 'function', name: 'a', parameters: {}, strict: false }],
    });
    const rs = events.find((e) => e.type === 'response.output_item.done' && e.item.type === 'reasoning')!.item;
    expect(rs.encrypted_content).toMatch(/^gAAAAA/);
    expect(mock.ledger.encryptedOf(rs.id)).toBe(rs.encrypted_content);
    expect(rs.summary.map((s: Ev) => s.text)).toEqual(['First part.', 'Second part.']);
    expect(
      events.filter((e) => e.type === 'response.reasoning_summary_text.delta').map((e) => e.summary_index),
    ).toEqual([0, 1]);
    // without include the item carries no encrypted content (and cannot come back statelessly)
    const plain = await stream({ model: 'o4-mini' });
    expect(plain.find((e) => e.type === 'response.output_item.done')!.item).not.toHaveProperty('encrypted_content');
  });

  /** A reasoning model's first turn: reasoning item + call, then the items as a client sends them back. */
  const firstTurn = async () => {
    reply = { reasoning: 'think', toolCalls: [{ name: 'a', args: {} }] };
    const events = await stream({ model: 'gpt-5', include: ['reasoning.encrypted_content'] });
    const [rs, fc] = events.filter((e) => e.type === 'response.output_item.done').map((e) => e.item);
    return { rs, fc, output: { type: 'function_call_output', call_id: fc.call_id, output: '{}' } };
  };

  it('accepts the reasoning item back in front of its call, byte for byte', async () => {
    const { rs, fc, output } = await firstTurn();
    reply = { text: 'done' };
    const events = await stream({
      model: 'gpt-5',
      include: ['reasoning.encrypted_content'],
      input: [{ role: 'user', content: 'q' }, rs, fc, output],
    });
    expect(events.at(-1)!.type).toBe('response.completed');
    const seen = mock.requests.at(-1)!;
    expect(seen.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(seen.messages[1]).toMatchObject({ reasoning: 'think', toolCalls: [{ id: fc.call_id, name: 'a' }] });
  });

  it('refuses what the real API refuses, with its own texts', async () => {
    const { rs, fc, output } = await firstTurn();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ input: [{ role: 'user', content: 'q' }, output] }, RESPONSES_ERRORS.noToolCall(fc.call_id)],
      [
        {
          input: [
            { role: 'user', content: 'q' },
            { type: 'function_call', call_id: 'call_x', name: 'a', arguments: '{}' },
          ],
        },
        RESPONSES_ERRORS.noToolOutput('call_x'),
      ],
      [
        { model: 'gpt-5', input: [{ role: 'user', content: 'q' }, fc, output] },
        RESPONSES_ERRORS.missingReasoning(fc.id, rs.id),
      ],
      // the call sent without its item id is still tied to its reasoning by call_id (stricter than the real API)
      [
        { model: 'gpt-5', input: [{ role: 'user', content: 'q' }, { ...fc, id: undefined }, output] },
        RESPONSES_ERRORS.missingReasoning(fc.id, rs.id),
      ],
      [
        {
          model: 'gpt-5',
          input: [
            { role: 'user', content: 'q' },
            { ...rs, encrypted_content: rs.encrypted_content.slice(0, -3) + 'abc' },
            fc,
            output,
          ],
        },
        RESPONSES_ERRORS.unverified(rs.encrypted_content.slice(0, -3) + 'abc'),
      ],
      [
        { model: 'gpt-5', input: [{ role: 'user', content: 'q' }, rs, { role: 'user', content: 'x' }, fc, output] },
        RESPONSES_ERRORS.missingFollowing(rs.id),
      ],
      [
        {
          model: 'gpt-5',
          input: [{ role: 'user', content: 'q' }, { ...rs, encrypted_content: undefined }, fc, output],
        },
        RESPONSES_ERRORS.notPersisted(rs.id),
      ],
      [
        { model: 'gpt-4o-mini', include: ['reasoning.encrypted_content'], input: 'q' },
        RESPONSES_ERRORS.encryptedUnsupported,
      ],
      [{ input: 'q', previous_response_id: 'resp_1' }, RESPONSES_ERRORS.previousResponse('resp_1')],
      [{ input: 'q', stop: ['\nObservation:'] }, RESPONSES_ERRORS.unknownParameter('stop')],
      [{ model: 'o3', input: 'q', temperature: 0 }, RESPONSES_ERRORS.unsupportedParameter('temperature')],
      [
        { input: 'q', tools: [{ type: 'function', function: { name: 'a' } }] },
        "Missing required parameter: 'tools[0].name'.",
      ],
    ];
    for (const [body, message] of cases) {
      const err = await fail(body);
      expect(err.status, message).toBeGreaterThanOrEqual(400);
      expect(err.error?.message ?? err.message).toBe(message);
    }
    expect(mock.violations).toEqual([
      'request ' +
        mock.journal.find((j) => j.req.body.previous_response_id)!.req.seq +
        ' sent previous_response_id resp_1',
    ]);
    mock.violations.length = 0;
  });

  it('reports a streamed context overflow as an error event (context_length_exceeded), a non-streamed one as 400', async () => {
    const streamed = await stream({ model: 'tiny', input: 'z'.repeat(1000) }).catch((e) => e);
    expect(streamed.error).toMatchObject({ code: 'context_length_exceeded', message: RESPONSES_ERRORS.contextLength });
    const whole = await fail({ model: 'tiny', input: 'z'.repeat(1000) });
    expect([whole.status, whole.code]).toEqual([400, 'context_length_exceeded']);
  });

  it('injects errors with headers, failures, incomplete responses and refusals', async () => {
    reply = { error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '10' } } };
    const err = await fail({ input: 'q' });
    expect([err.status, err.headers.get('retry-after-ms')]).toEqual([429, '10']);
    reply = { failure: { code: 'server_error', message: 'boom' } };
    expect((await stream({}).catch((e) => e)).error).toMatchObject({ code: 'server_error', message: 'boom' });
    reply = {
      text: 'cut here',
      toolCalls: [{ name: 'a', args: { long: 'x'.repeat(40) } }],
      incomplete: 'max_output_tokens',
      chunking: 'fine',
    };
    const cut = await stream({});
    expect(cut.at(-1)).toMatchObject({
      type: 'response.incomplete',
      response: { status: 'incomplete', incomplete_details: { reason: 'max_output_tokens' } },
    });
    expect(cut.some((e) => e.type === 'response.function_call_arguments.done')).toBe(false);
    reply = { refusal: 'I can’t help with that.' };
    const refused = await stream({});
    expect(
      refused
        .filter((e) => e.type === 'response.refusal.delta')
        .map((e) => e.delta)
        .join(''),
    ).toBe('I can’t help with that.');
  });

  it('answers non-streamed requests with a Response object, replays raw bodies, and stops mid-stream on cutAfterFrames', async () => {
    reply = { text: 'whole', toolCalls: [{ name: 'a', args: { q: 1 } }] };
    const res = await client.responses.create({ model: 'gpt-4o-mini', input: 'q', store: false });
    expect(res.output.map((o) => o.type)).toEqual(['message', 'function_call']);
    expect(res.output_text).toBe('whole');
    reply = {
      rawSse:
        'event: response.completed\ndata: {"type":"response.completed","response":{"id":"resp_raw","output":[],"usage":null}}\n\n',
    };
    expect((await stream({})).map((e) => e.response.id)).toEqual(['resp_raw']);
    reply = { text: 'a b c d e f g h', chunking: 'fine', cutAfterFrames: 2 };
    const partial: Ev[] = [];
    const cutErr = await (async () => {
      for await (const e of await client.responses.create({
        model: 'gpt-4o-mini',
        input: 'q',
        store: false,
        stream: true,
      }))
        partial.push(e as Ev);
    })().catch((e) => e);
    expect(cutErr).toBeInstanceOf(Error);
    expect(partial.filter((e) => e.type === 'response.output_text.delta')).toHaveLength(2);
  });

  it('plays a Chat-only compatible server when told to (404 on /v1/responses)', async () => {
    const chatOnly = await startMockLlm({ responsesApi: false });
    const c = new OpenAI({ apiKey: 'k', baseURL: `${chatOnly.url}/v1`, maxRetries: 0 });
    const err = await c.responses.create({ model: 'm', input: 'q' }).catch((e) => e);
    expect(err.status).toBe(404);
    await chatOnly.close();
  });
});
