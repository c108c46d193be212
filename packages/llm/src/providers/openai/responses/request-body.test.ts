import { describe, expect, it } from 'vitest';
import { responsesBody } from './request-body.js';
import type { ModelCallRequest } from '../../../types.js';

const req = (params: Record<string, unknown>, over: Partial<ModelCallRequest> = {}): ModelCallRequest => ({
  model: { provider: 'openai', name: 'gpt-4o-mini', params },
  messages: [{ role: 'user', content: 'q' }],
  tools: null,
  ...over,
});

describe('Responses body: model.params the adapter reads itself, of the wrong type', () => {
  it('takes the first well-typed token limit, a string effort and an object reasoning; others are not sent', () => {
    const body = responsesBody(
      req({
        max_output_tokens: 'lots',
        max_completion_tokens: 12.5,
        max_tokens: 50,
        reasoning: 'high',
        reasoning_effort: 5,
      }),
    );
    expect(body.max_output_tokens).toBe(50);
    expect(body).not.toHaveProperty('reasoning');
    for (const k of ['max_tokens', 'max_completion_tokens', 'reasoning_effort']) expect(body).not.toHaveProperty(k);
    const none = responsesBody(req({ max_tokens: -1, reasoning: ['x'], reasoning_effort: 'low' }));
    expect(none).not.toHaveProperty('max_output_tokens');
    expect(none.reasoning).toEqual({ effort: 'low' });
    expect(responsesBody(req({ reasoning: { summary: 'auto' }, reasoning_effort: 'high' })).reasoning).toEqual({
      summary: 'auto',
      effort: 'high',
    });
  });

  it('a `text` param that is not an object is not spread into the structured-output format', () => {
    const body = responsesBody(
      req(
        { text: ['verbose'] },
        { output: { name: 'out', schema: { type: 'object', properties: {}, additionalProperties: false } } },
      ),
    );
    expect(Object.keys(body.text as object)).toEqual(['format']);
    expect(
      responsesBody(req({ text: { verbosity: 'low' } }, { output: { name: 'out', schema: { type: 'object' } } })).text,
    ).toMatchObject({ verbosity: 'low', format: { name: 'out' } });
  });
});
