import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OPENAI_ERRORS } from './openai-wire.js';
import { startMockLlm, type MockLlmServer } from './server.js';

describe('mock LLM server: strict like the real API', () => {
  let mock: MockLlmServer;
  let client: OpenAI;
  beforeAll(async () => {
    mock = await startMockLlm({ contextWindows: { tiny: 50 }, script: () => ({ text: 'hello there', toolCalls: [] }) });
    client = new OpenAI({ apiKey: 'k', baseURL: `${mock.url}/v1`, maxRetries: 0 });
  });
  afterAll(async () => {
    await mock.close();
  });

  it('streams SSE with a usage chunk and [DONE], and answers non-streaming requests', async () => {
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage = null;
    for await (const c of stream) {
      text += c.choices[0]?.delta.content ?? '';
      if (c.usage) usage = c.usage;
    }
    expect(text).toBe('hello there');
    expect(usage).toMatchObject({ prompt_tokens: expect.any(Number), completion_tokens: expect.any(Number) });
    const whole = await client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(whole.choices[0]!.message.content).toBe('hello there');
  });

  it('refuses a tool message without a preceding call with OpenAI’s own text', async () => {
    const err = await client.chat.completions
      .create({
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'c1', content: 'r' },
        ],
      })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toBe(OPENAI_ERRORS.orphanTool);
  });

  it('refuses a call without a result, naming the id', async () => {
    const err = await client.chat.completions
      .create({
        model: 'm',
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } }],
          },
          { role: 'user', content: 'y' },
        ],
      })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.error.message).toBe(OPENAI_ERRORS.missingResults(['call_a']));
  });

  it('enforces a context window with context_length_exceeded', async () => {
    const err = await client.chat.completions
      .create({ model: 'tiny', messages: [{ role: 'user', content: 'z'.repeat(1000) }] })
      .catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.code).toBe('context_length_exceeded');
  });

  it('injects errors with retry headers', async () => {
    mock.setScript(() => ({ error: { status: 429, message: 'slow down', headers: { 'retry-after-ms': '10' } } }));
    const err = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e) => e);
    expect(err.status).toBe(429);
    expect(err.headers.get('retry-after-ms')).toBe('10');
    expect(mock.journal.at(-1)!.injected).toBe(true);
  });
});
