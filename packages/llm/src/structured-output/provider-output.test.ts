import { describe, expect, it } from 'vitest';
import type { Message } from '@agentloop/protocol';
import { chatOutput } from '../providers/openai/chat-output.js';
import { geminiOutput } from '../providers/google/gemini-output.js';

const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
const output = { name: 'result', schema };
const messages: Message[] = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'q' },
];
const tool = [{ name: 't', description: '', parameters: {} }];
const model = (name: string) => ({ provider: 'google' as const, name, params: {} });

describe('structured output in each adapter’s request', () => {
  it('Chat: strict json_schema when the schema has a strict form, strict: false with the schema as given otherwise', () => {
    expect(chatOutput('openai', { output, messages }).body).toEqual({
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'result', schema: { ...schema, additionalProperties: false }, strict: true },
      },
    });
    const open = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(chatOutput('openai-compatible', { output: { name: 'x', schema: open }, messages }).body).toEqual({
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: open, strict: false } },
    });
    expect(chatOutput('openai', { messages })).toEqual({ body: {}, messages });
  });
  it('DeepSeek: JSON mode, the schema in a system message after the leading ones (with the word json)', () => {
    const r = chatOutput('deepseek', { output, messages });
    expect(r.body).toEqual({ response_format: { type: 'json_object' } });
    expect(r.messages.map((m) => m.role)).toEqual(['system', 'system', 'user']);
    expect(r.messages[1]!.content).toMatch(/json/);
    expect(r.messages[1]!.content).toContain(JSON.stringify(schema));
  });
  it('Gemini: responseJsonSchema always on 3+, only without tools on 2.x (the instruction instead)', () => {
    const native = { responseMimeType: 'application/json', responseJsonSchema: schema };
    expect(geminiOutput({ model: model('gemini-3-flash'), tools: tool, output, messages }).config).toEqual(native);
    expect(geminiOutput({ model: model('gemini-2.5-flash'), tools: null, output, messages }).config).toEqual(native);
    const withTools = geminiOutput({ model: model('gemini-2.5-flash'), tools: tool, output, messages });
    expect(withTools.config).toEqual({});
    expect(withTools.messages[1]!.content).toContain(JSON.stringify(schema));
    for (const name of ['gemini-1.5-pro', 'gemini-2.0-flash-001', 'gemini-flash-latest'])
      expect(geminiOutput({ model: model(name), tools: tool, output, messages }).config).toEqual({});
    for (const name of ['gemini-3-pro-preview', 'gemini-3.1-flash', 'gemini-10-ultra'])
      expect(geminiOutput({ model: model(name), tools: tool, output, messages }).config).toEqual(native);
  });
});
