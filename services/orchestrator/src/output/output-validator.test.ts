import { describe, expect, it } from 'vitest';
import { RunRequestSchema } from '@agentloop/protocol';
import { OutputValidator, parseAnswer } from './output-validator.js';
import { outputSchemaIssues, repairMessage } from './output-intake.js';

const person = { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } }, required: ['name', 'age'] };

describe('parseAnswer', () => {
  const cases: Array<[string, unknown]> = [
    ['{"a":1}', { a: 1 }],
    ['  \n{"a":1}\n ', { a: 1 }],
    ['```json\n{"a":1}\n```', { a: 1 }],
    ['```\n[1,2]\n```', [1, 2]],
    ['```JSON\n  {"a":"```"}\n```', { a: '```' }],
  ];
  for (const [text, value] of cases) it(`reads ${JSON.stringify(text)}`, () => expect(parseAnswer(text)).toEqual({ ok: true, value }));
  it('says why text is not JSON (prose, empty, too deep)', () => {
    expect(parseAnswer('Here you go: {"a":1}')).toMatchObject({ ok: false, error: expect.stringMatching(/not JSON/) });
    expect(parseAnswer('   ')).toMatchObject({ ok: false, error: expect.stringMatching(/empty/) });
    expect(parseAnswer(`${'['.repeat(100)}${']'.repeat(100)}`)).toMatchObject({ ok: false, error: expect.stringMatching(/deeper than 64/) });
  });
});

describe('OutputValidator', () => {
  const v = new OutputValidator();
  it('validates with ajv and names each problem with its JSON pointer', () => {
    expect(v.check(person, '{"name":"Ada","age":36}')).toEqual({ ok: true, value: { name: 'Ada', age: 36 } });
    const bad = v.check({ ...person, additionalProperties: false }, '{"name":1,"age":-1,"x":true}');
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.errors).toEqual(expect.arrayContaining(['/name must be string', '/age must be >= 0', "/ must NOT have additional properties ('x')"]));
  });
  it('bounds the errors it reports', () => {
    const many = { type: 'array', items: { type: 'string' } };
    const r = v.check(many, JSON.stringify(Array.from({ length: 50 }, (_, i) => i)));
    expect(!r.ok && r.errors.length).toBe(21);
    expect(!r.ok && r.errors.at(-1)).toBe('… and 30 more');
  });
  it('reads draft-07 and 2020-12 (by $schema, or by a 2020 keyword), and refuses another $schema', () => {
    const tuple07 = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'array', items: [{ type: 'string' }], additionalItems: false };
    expect(v.check(tuple07, '["a"]').ok).toBe(true);
    expect(v.check(tuple07, '["a",1]').ok).toBe(false);
    const tuple2020 = { type: 'array', prefixItems: [{ type: 'string' }], items: false };
    expect(v.check(tuple2020, '["a"]').ok).toBe(true);
    expect(v.check(tuple2020, '["a","b"]').ok).toBe(false);
    expect(v.compile({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' })).toMatchObject({ ok: false });
  });
  it('gives ajv’s reason for a schema it cannot compile, and loads no remote $ref', () => {
    expect(v.compile({ type: 'strin' })).toMatchObject({ ok: false, message: expect.stringMatching(/schema is invalid/) });
    expect(v.compile({ $ref: 'https://example.com/schema.json' })).toMatchObject({ ok: false, message: expect.stringMatching(/resolve reference/) });
  });
  it('compiles two schemas with the same $id independently (tenants do not share a namespace)', () => {
    const a = v.check({ $id: 'https://x/s', type: 'string' }, '"s"');
    const b = v.check({ $id: 'https://x/s', type: 'number' }, '"s"');
    expect([a.ok, b.ok]).toEqual([true, false]);
  });
});

describe('outputSchemaIssues (intake)', () => {
  const req = (schema: Record<string, unknown>, provider = 'openai') => RunRequestSchema.parse({ input: 'x', model: { provider, name: 'm' }, output: { schema } });
  it('accepts a schema OpenAI strict mode can take, once additionalProperties: false is added', () => {
    expect(outputSchemaIssues(req(person), new OutputValidator())).toEqual([]);
  });
  it('refuses, with a path into the request: an uncompilable schema, a non-strict one for OpenAI, a hazardous pattern', () => {
    expect(outputSchemaIssues(req({ type: 'nope' }), new OutputValidator())).toMatchObject([{ path: ['output', 'schema'], code: 'invalid_schema' }]);
    const optional = { type: 'object', properties: { a: { type: 'string' } } };
    expect(outputSchemaIssues(req(optional), new OutputValidator())).toMatchObject([
      { path: ['output', 'schema', 'properties', 'a'], code: 'not_strict_compatible', rule: 'optional_property', message: expect.stringMatching(/rule optional_property, at output\.schema\/properties\/a/) },
    ]);
    expect(outputSchemaIssues(req({ type: 'string', pattern: '^(a+)+$' }, 'google'), new OutputValidator())).toMatchObject([{ path: ['output', 'schema', 'pattern'], code: 'schema_too_complex' }]);
  });
  it('takes other providers’ schemas as given (no strict rules without OpenAI in the chain)', () => {
    expect(outputSchemaIssues(req({ type: 'object', properties: { a: { type: 'string' } } }, 'google'), new OutputValidator())).toEqual([]);
  });
  it('the repair message lists the errors', () => {
    expect(repairMessage('answer', ['/a must be string'])).toMatch(/"answer"[\s\S]*- \/a must be string/);
  });
});
