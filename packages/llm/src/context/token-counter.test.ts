import { describe, expect, it } from 'vitest';
import { counterFor, toolsTokenBound, toolsTokens } from './token-counter.js';

const tools = [
  {
    name: 'lookup',
    description: 'Find a record — by its id',
    parameters: { type: 'object', properties: { id: { type: 'string', description: 'der Schlüssel 🔑' } } },
  },
  { name: 'noop', description: '', parameters: { type: 'object' } },
];

describe('tool definition counts', () => {
  it('bound the exact count by bytes, the same on every call with the same schemas', () => {
    const exact = counterFor({ provider: 'openai', name: 'gpt-4o-mini', params: {} });
    const bytes = tools.reduce(
      (n, t) =>
        n +
        10 +
        Buffer.byteLength(t.name) +
        Buffer.byteLength(t.description) +
        Buffer.byteLength(JSON.stringify(t.parameters)),
      0,
    );
    expect(toolsTokenBound(exact, tools)).toBe(bytes);
    expect(toolsTokenBound(exact, tools)).toBe(bytes); // from the schemas' cached text
    expect(toolsTokens(exact, tools)).toBeLessThanOrEqual(bytes);
    expect(toolsTokens(exact, tools)).toBe(toolsTokens(exact, tools));
  });
  it('estimate by characters where no exact counter exists, and count a new schema object afresh', () => {
    const estimate = counterFor({ provider: 'google', name: 'gemini-2.5-flash', params: {} });
    const first = toolsTokenBound(estimate, tools);
    expect(first).toBe(toolsTokens(estimate, tools));
    const bigger = [{ ...tools[0]!, parameters: { ...tools[0]!.parameters, required: ['id'] } }, tools[1]!];
    expect(toolsTokenBound(estimate, bigger)).toBeGreaterThan(first);
  });
});
