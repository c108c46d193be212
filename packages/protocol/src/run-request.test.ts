import { describe, expect, it } from 'vitest';
import { RunRequestSchema } from './run-request.js';
import { canonicalJson, jsonDepth, textJsonDepth } from './json.js';

const minimal = { input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } };

describe('RunRequest', () => {
  it('fills every default of SPEC §2', () => {
    const r = RunRequestSchema.parse(minimal);
    expect(r).toMatchObject({
      fallbacks: [],
      tools: [],
      clientTools: [],
      strategy: 'function_calling',
      mode: 'interactive',
      metadata: {},
      limits: {
        maxIterations: 25,
        onMaxIterations: 'finalize',
        maxTotalTokens: null,
        maxCostUsd: null,
        maxWallMs: null,
        maxToolCalls: null,
        repeatLimit: 3,
      },
      approval: { require: [], autoApprove: [], timeoutMs: 86_400_000, onTimeout: 'deny' },
      context: { compressAt: 0.8, compression: 'summarize', toolResultMaxTokens: 20_000 },
    });
  });
  it.each([
    ['maxIterations 0', { limits: { maxIterations: 0 } }],
    ['maxIterations 201', { limits: { maxIterations: 201 } }],
    ['unknown provider', { model: { provider: 'x', name: 'y' } }],
    ['openai-compatible without baseUrl', { model: { provider: 'openai-compatible', name: 'y' } }],
    ['bad tool name', { tools: ['has space'] }],
    ['strategy', { strategy: 'telepathy' }],
    [
      'input ending with an assistant message',
      {
        input: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
      },
    ],
    [
      'orphan tool message',
      {
        input: [
          { role: 'user', content: 'a' },
          { role: 'tool', toolCallId: 'x', content: 'r' },
        ],
      },
    ],
    [
      'unanswered call',
      {
        input: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 't', arguments: '{}' }] },
          { role: 'user', content: 'b' },
        ],
      },
    ],
  ])('refuses %s', (_what, over) => {
    expect(RunRequestSchema.safeParse({ ...minimal, ...over }).success).toBe(false);
  });
  it('checks the known params of the model and every fallback (a wrong type is an issue at its path); unknown keys pass', () => {
    const issuesAt = (over: object) => {
      const r = RunRequestSchema.safeParse({ ...minimal, ...over });
      return r.success ? [] : r.error.issues.map((i) => i.path.join('.'));
    };
    expect(issuesAt({ model: { provider: 'google', name: 'gemini-2.5-flash', params: { stopSequences: 5 } } })).toEqual(
      ['model.params.stopSequences'],
    );
    expect(issuesAt({ fallbacks: [{ provider: 'google', name: 'g', params: { topK: 'many' } }] })).toEqual([
      'fallbacks.0.params.topK',
    ]);
    expect(issuesAt({ model: { provider: 'openai', name: 'gpt-4o-mini', params: { temperature: '0.5' } } })).toEqual([
      'model.params.temperature',
    ]);
    expect(
      issuesAt({
        model: {
          provider: 'google',
          name: 'g',
          params: { safetySettings: [{ category: 'c', threshold: 't', method: 'SEVERITY' }] },
        },
      }),
    ).toEqual(['model.params.safetySettings.0']);
    expect(
      issuesAt({
        model: {
          provider: 'openai',
          name: 'gpt-4o-mini',
          params: { temperature: 0, stop: null, max_tokens: 100, some_new_setting: { x: 1 } },
        },
      }),
    ).toEqual([]);
    expect(
      issuesAt({
        model: {
          provider: 'google',
          name: 'g',
          params: { temperature: 0.2, stopSequences: ['END'], thinkingConfig: { thinkingBudget: -1 } },
        },
      }),
    ).toEqual([]);
    expect(issuesAt({ model: { provider: 'google', name: 'g', params: { temperature: null, topK: null } } })).toEqual(
      [],
    ); // null: the provider's default, as for OpenAI
  });
  it('accepts a prior conversation that satisfies the invariant', () => {
    const input = [
      { role: 'user', content: 'a' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c', name: 't', arguments: '{}' }] },
      { role: 'tool', toolCallId: 'c', content: 'r' },
    ];
    expect(RunRequestSchema.safeParse({ ...minimal, input }).success).toBe(true);
  });
});

describe('json helpers', () => {
  it('measures depth with and without parsing', () => {
    expect(jsonDepth({ a: [{ b: 1 }] })).toBe(3);
    expect(textJsonDepth('{"a":[{"b":"[[[["}]}')).toBe(3);
  });
  it('canonicalizes key order', () => {
    expect(canonicalJson({ b: 1, a: { d: 2, c: [3, { f: 1, e: 2 }] } })).toBe(
      '{"a":{"c":[3,{"e":2,"f":1}],"d":2},"b":1}',
    );
  });

  it('refuses model names that could steer a request path', () => {
    const parse = (name: string) =>
      RunRequestSchema.safeParse({ input: 'x', model: { provider: 'google', name } }).success;
    for (const ok of [
      'gemini-2.5-flash',
      'ft:gpt-4o-mini:org:custom:abc',
      'models/gemini-2.5-pro',
      'deepseek-chat',
      'Qwen/Qwen2.5-72B-Instruct',
    ])
      expect(parse(ok), ok).toBe(true);
    for (const bad of ['../admin', 'a/../../b', '%2e%2e/x', 'x?key=1', 'x#y', 'a b', '', '/abs', 'a\\b'])
      expect(parse(bad), bad).toBe(false);
  });

  it('checks model.api', () => {
    const parse = (api: unknown) =>
      RunRequestSchema.safeParse({ input: 'x', model: { provider: 'openai', name: 'gpt-4o', api } }).success;
    expect([parse('responses'), parse('chat'), parse([0]), parse('soap')]).toEqual([true, true, false, false]);
  });
});
