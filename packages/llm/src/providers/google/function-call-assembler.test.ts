import { describe, expect, it } from 'vitest';
import { GeminiFunctionCallAssembler } from './function-call-assembler.js';
import { generationParams } from './gemini-params.js';

describe('GeminiFunctionCallAssembler with hostile streamed paths', () => {
  it('refuses prototype keys: nothing reaches Object.prototype, and the call is marked malformed', () => {
    const a = new GeminiFunctionCallAssembler();
    a.add({
      name: 'calc',
      partialArgs: [
        { jsonPath: '$.__proto__.polluted', stringValue: 'yes' },
        { jsonPath: '$.constructor.prototype.x', stringValue: 'y' },
      ],
    });
    const [call] = a.finish();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect(call!.providerData).toMatchObject({ malformed: expect.stringMatching(/refused/) });
  });

  it('refuses absurd array indexes and depths instead of building them', () => {
    for (const jsonPath of ['$.a[100000000]', `$${'.a'.repeat(100)}`]) {
      const a = new GeminiFunctionCallAssembler();
      const t0 = performance.now();
      a.add({ name: 'calc', partialArgs: [{ jsonPath, numberValue: 1 }] });
      expect(a.finish()[0]!.arguments).toBe('{}');
      expect(performance.now() - t0).toBeLessThan(1000);
    }
  });

  it('still assembles ordinary streamed arguments', () => {
    const a = new GeminiFunctionCallAssembler();
    a.add({
      name: 'calc',
      partialArgs: [{ jsonPath: '$.expression', stringValue: '1+', willContinue: true }],
      willContinue: true,
    });
    a.add({
      partialArgs: [
        { jsonPath: '$.expression', stringValue: '2' },
        { jsonPath: '$.list[1]', numberValue: 3 },
      ],
    });
    expect(JSON.parse(a.finish()[0]!.arguments)).toEqual({ expression: '1+2', list: [null, 3] });
  });
});

describe('Gemini model.params', () => {
  it('pass generation settings only: never httpOptions, headers or anything else the engine owns', () => {
    expect(
      generationParams({
        temperature: 0,
        thinkingConfig: { thinkingBudget: 0 },
        httpOptions: { baseUrl: 'http://evil' },
        headers: { a: 'b' },
        extraBody: {},
        tools: [],
        cachedContent: 'x',
        systemInstruction: 's',
      }),
    ).toEqual({
      temperature: 0,
      thinkingConfig: { thinkingBudget: 0 },
    });
  });
});
