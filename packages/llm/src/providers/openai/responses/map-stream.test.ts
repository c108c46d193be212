import { describe, expect, it } from 'vitest';
import { ResponsesStreamReader } from './map-stream.js';
import { LlmError, type ModelCallRequest } from '../../../types.js';

const req: ModelCallRequest = { model: { provider: 'openai', name: 'm', params: {} }, messages: [], tools: null };
const read = (events: unknown[]) => {
  const r = new ResponsesStreamReader(req, 'm');
  for (const e of events) r.push(e);
  return r.finish();
};
const completed = (response: Record<string, unknown> = {}) => ({
  type: 'response.completed',
  response: { model: 'm-2025', usage: { input_tokens: 3, output_tokens: 2 }, ...response },
});

describe('ResponsesStreamReader: what servers send that the happy path does not', () => {
  it('reads a field of the wrong type as absent, not the whole event: usage and model survive a null or a string', () => {
    const res = read([
      { type: 'response.created', response: { model: null } },
      { type: 'response.output_text.delta', delta: 'hi', item_id: 7, output_index: 'x' },
      {
        type: 'response.completed',
        response: {
          model: 'real',
          usage: {
            input_tokens: 10,
            output_tokens: 4,
            input_tokens_details: { cached_tokens: null },
            output_tokens_details: 'n/a',
          },
        },
      },
    ]);
    expect([res.message.content, res.model]).toEqual(['hi', 'real']);
    expect(res.usage).toEqual({ promptTokens: 10, completionTokens: 4, reasoningTokens: 0, cachedTokens: 0 });
  });

  it('takes text a server sent only in the finished item, and a call whose arguments came whole in output_item.added', () => {
    const res = read([
      { type: 'response.output_item.added', output_index: 0, item: { type: 'message', id: 'msg_1', content: [] } },
      {
        type: 'response.output_item.done',
        output_index: 0,
        item: {
          type: 'message',
          id: 'msg_1',
          content: [{ text: 'no type' }, { type: 'output_text', text: 'whole text' }],
        },
      },
      {
        type: 'response.output_item.added',
        output_index: 1,
        item: { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f', arguments: '{"a":1}' },
      },
      {
        type: 'response.output_item.done',
        output_index: 1,
        item: { type: 'function_call', id: 'fc_1', call_id: 'call_1', name: 'f' },
      },
      completed(),
    ]);
    expect(res.message.content).toBe('whole text');
    expect(res.message.toolCalls).toEqual([
      { id: 'call_1', name: 'f', arguments: '{"a":1}', providerData: { provider: 'openai', itemId: 'fc_1' } },
    ]);
  });

  it('reads the output of a response that streamed no items (only its final state)', () => {
    const res = read([
      completed({
        output: [
          { type: 'message', id: 'msg_9', content: [{ type: 'output_text', text: 'late' }] },
          { type: 'function_call', id: 'fc_9', call_id: 'call_9', name: 'g', arguments: '{}' },
        ],
      }),
    ]);
    expect([res.message.content, res.message.toolCalls?.map((c) => c.id), res.finishReason]).toEqual([
      'late',
      ['call_9'],
      'tool_calls',
    ]);
  });

  it('a call without call_id or name gets a generated id and the reserved name; a reasoning item without encrypted content is not kept', () => {
    const res = read([
      { type: 'response.output_item.done', output_index: 0, item: { type: 'reasoning', id: 'rs_1', summary: [] } },
      { type: 'response.function_call_arguments.delta', output_index: 1, item_id: 'fc_2', delta: '{"x"' },
      { type: 'response.function_call_arguments.delta', output_index: 1, item_id: 'fc_2', delta: ':2}' },
      completed(),
    ]);
    expect(res.message.toolCalls).toEqual([
      {
        id: expect.stringMatching(/^call_/),
        name: '_unnamed',
        arguments: '{"x":2}',
        providerData: { provider: 'openai', itemId: 'fc_2' },
      },
    ]);
    expect(res.message.providerData).toBeUndefined();
  });

  it('an error event in either shape, and response.failed, throw classified errors', () => {
    const fails = (events: unknown[]) => {
      try {
        read(events);
      } catch (e) {
        return e as LlmError;
      }
      throw new Error('did not throw');
    };
    expect(fails([{ type: 'error', code: 'context_length_exceeded', message: 'too long' }]).kind).toBe(
      'context_length',
    );
    expect(fails([{ type: 'error', error: { code: 'insufficient_quota', message: 'quota' } }]).kind).toBe('rate_limit');
    expect(fails([{ type: 'response.failed', response: { error: { code: null, message: 'boom' } } }]).kind).toBe(
      'server',
    );
    expect(fails([{ type: 'response.output_text.delta', delta: 'x' }]).kind).toBe('network'); // no final state: no answer
  });

  it('counts as the Chat path reads them (numeric strings read, fractions rounded up, unsafe ones 0); an absurdly long model name is not taken', () => {
    const res = read([
      { type: 'response.created', response: { model: 'm'.repeat(10_000) } },
      { type: 'response.output_text.delta', delta: 'hi' },
      completed({
        model: 'x'.repeat(201),
        usage: {
          input_tokens: '120',
          output_tokens: 7.4,
          input_tokens_details: { cached_tokens: 2 ** 60 },
          output_tokens_details: { reasoning_tokens: -1 },
        },
      }),
    ]);
    expect(res.model).toBe('m');
    expect(res.usage).toEqual({ promptTokens: 120, completionTokens: 8, reasoningTokens: 0, cachedTokens: 0 });
  });
});
