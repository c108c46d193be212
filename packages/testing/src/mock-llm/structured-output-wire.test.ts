import { describe, expect, it } from 'vitest';
import {
  GEMINI_JSON_WITH_TOOLS,
  chatResponseFormat,
  geminiResponseFormat,
  strictSchemaError,
} from './structured-output-wire.js';

const strictObj = {
  type: 'object',
  properties: { a: { type: 'string' } },
  required: ['a'],
  additionalProperties: false,
};
const chat = (response_format: unknown, content = 'hi') => ({
  model: 'm',
  messages: [{ role: 'user', content }],
  response_format,
});

describe('the mock checks structured output like the real APIs', () => {
  it('OpenAI strict json_schema: the API’s own texts for each rule', () => {
    expect(strictSchemaError('answer', strictObj)).toBeNull();
    expect(strictSchemaError('answer', { ...strictObj, additionalProperties: undefined })).toBe(
      "Invalid schema for response_format 'answer': In context=(), 'additionalProperties' is required to be supplied and to be false.",
    );
    expect(
      strictSchemaError('x', {
        ...strictObj,
        properties: {
          a: { type: 'object', properties: { b: { type: 'string' } }, required: [], additionalProperties: false },
        },
      }),
    ).toBe(
      "Invalid schema for response_format 'x': In context=('properties', 'a'), 'required' is required to be supplied and to be an array including every key in properties. Missing 'b'.",
    );
    expect(strictSchemaError('x', { ...strictObj, properties: { a: { oneOf: [{ type: 'string' }] } } })).toMatch(
      /In context=\('properties', 'a'\), 'oneOf' is not permitted\.$/,
    );
    expect(strictSchemaError('x', { type: 'array' })).toBe(
      `Invalid schema for response_format 'x': schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`,
    );
  });
  it('Chat: strict errors are 400s, non-strict schemas pass, JSON mode needs the word json; DeepSeek has no json_schema', () => {
    expect(() =>
      chatResponseFormat(
        chat({
          type: 'json_schema',
          json_schema: { name: 'n', strict: true, schema: { type: 'object', properties: {} } },
        }),
        'openai',
      ),
    ).toThrow(/'additionalProperties' is required/);
    expect(
      chatResponseFormat(
        chat({ type: 'json_schema', json_schema: { name: 'n', strict: false, schema: { type: 'object' } } }),
        'compat',
      ),
    ).toEqual({ type: 'json_schema', name: 'n', schema: { type: 'object' }, strict: false });
    expect(() => chatResponseFormat(chat({ type: 'json_object' }), 'deepseek')).toThrow(/must contain the word 'json'/);
    expect(chatResponseFormat(chat({ type: 'json_object' }, 'answer in JSON'), 'deepseek')).toEqual({
      type: 'json_object',
    });
    expect(() =>
      chatResponseFormat(chat({ type: 'json_schema', json_schema: { name: 'n', schema: strictObj } }), 'deepseek'),
    ).toThrow('This response_format type is unavailable now');
  });
  it('Gemini: 2.x refuses a JSON response with function declarations, 3 takes both', () => {
    const body = {
      generationConfig: { responseMimeType: 'application/json', responseJsonSchema: strictObj },
      tools: [{ functionDeclarations: [{ name: 'f' }] }],
    };
    expect(() => geminiResponseFormat(body, 'gemini-2.5-flash')).toThrow(GEMINI_JSON_WITH_TOOLS);
    expect(geminiResponseFormat(body, 'gemini-3-flash')).toEqual({
      type: 'gemini_json',
      mimeType: 'application/json',
      schema: strictObj,
    });
    expect(geminiResponseFormat({ ...body, tools: [] }, 'gemini-2.5-flash')).toMatchObject({ type: 'gemini_json' });
  });
});
