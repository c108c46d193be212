import { afterAll, describe, expect, it } from 'vitest';
import { RunRequestSchema } from '@agentloop/protocol';
import { OutputValidator, parseAnswer } from './output-validator.js';
import { outputSchemaIssues, repairMessage } from './output-intake.js';
import { IsolatedOutputValidator, OutputValidatorPool } from './isolated-validator.js';

const person = {
  type: 'object',
  properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
  required: ['name', 'age'],
};

describe('parseAnswer', () => {
  const cases: Array<[string, unknown]> = [
    ['{"a":1}', { a: 1 }],
    ['  \n{"a":1}\n ', { a: 1 }],
    ['```json\n{"a":1}\n```', { a: 1 }],
    ['```\n[1,2]\n```', [1, 2]],
    ['```JSON\n  {"a":"```"}\n```', { a: '```' }],
  ];
  for (const [text, value] of cases)
    it(`reads ${JSON.stringify(text)}`, () => expect(parseAnswer(text)).toEqual({ ok: true, value }));
  it('says why text is not JSON (prose, empty, too deep)', () => {
    expect(parseAnswer('Here you go: {"a":1}')).toMatchObject({ ok: false, error: expect.stringMatching(/not JSON/) });
    expect(parseAnswer('   ')).toMatchObject({ ok: false, error: expect.stringMatching(/empty/) });
    expect(parseAnswer(`${'['.repeat(100)}${']'.repeat(100)}`)).toMatchObject({
      ok: false,
      error: expect.stringMatching(/deeper than 64/),
    });
  });
});

describe('OutputValidator', () => {
  const v = new OutputValidator();
  it('validates with ajv and names each problem with its JSON pointer', () => {
    expect(v.check(person, '{"name":"Ada","age":36}')).toEqual({ ok: true, value: { name: 'Ada', age: 36 } });
    const bad = v.check({ ...person, additionalProperties: false }, '{"name":1,"age":-1,"x":true}');
    expect(bad.ok).toBe(false);
    if (bad.ok) return;
    expect(bad.errors).toEqual(
      expect.arrayContaining([
        '/name must be string',
        '/age must be >= 0',
        "/ must NOT have additional properties ('x')",
      ]),
    );
  });
  it('bounds the errors it reports', () => {
    const many = { type: 'array', items: { type: 'string' } };
    const r = v.check(many, JSON.stringify(Array.from({ length: 50 }, (_, i) => i)));
    expect(!r.ok && r.errors.length).toBe(21);
    expect(!r.ok && r.errors.at(-1)).toBe('… and 30 more');
  });
  it('reads draft-07 and 2020-12 (by $schema, or by a 2020 keyword), and refuses another $schema', () => {
    const tuple07 = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'array',
      items: [{ type: 'string' }],
      additionalItems: false,
    };
    expect(v.check(tuple07, '["a"]').ok).toBe(true);
    expect(v.check(tuple07, '["a",1]').ok).toBe(false);
    const tuple2020 = { type: 'array', prefixItems: [{ type: 'string' }], items: false };
    expect(v.check(tuple2020, '["a"]').ok).toBe(true);
    expect(v.check(tuple2020, '["a","b"]').ok).toBe(false);
    expect(v.compile({ $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' })).toMatchObject({
      ok: false,
    });
  });
  it('gives ajv’s reason for a schema it cannot compile, and loads no remote $ref', () => {
    expect(v.compile({ type: 'strin' })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/schema is invalid/),
    });
    expect(v.compile({ $ref: 'https://example.com/schema.json' })).toMatchObject({
      ok: false,
      message: expect.stringMatching(/resolve reference/),
    });
  });
  it('compiles two schemas with the same $id independently (tenants do not share a namespace)', () => {
    const a = v.check({ $id: 'https://x/s', type: 'string' }, '"s"');
    const b = v.check({ $id: 'https://x/s', type: 'number' }, '"s"');
    expect([a.ok, b.ok]).toEqual([true, false]);
  });
});

describe('outputSchemaIssues (intake)', () => {
  const req = (schema: Record<string, unknown>, provider = 'openai') =>
    RunRequestSchema.parse({ input: 'x', model: { provider, name: 'm' }, output: { schema } });
  const v = new IsolatedOutputValidator();
  afterAll(() => v.close());
  it('accepts a schema OpenAI strict mode can take, once additionalProperties: false is added', async () => {
    expect(await outputSchemaIssues(req(person), v)).toEqual([]);
  });
  it('refuses, with a path into the request: an uncompilable schema, a non-strict one for OpenAI, a hazardous pattern', async () => {
    expect(await outputSchemaIssues(req({ type: 'nope' }), v)).toMatchObject([
      { path: ['output', 'schema'], code: 'invalid_schema' },
    ]);
    const optional = { type: 'object', properties: { a: { type: 'string' } } };
    expect(await outputSchemaIssues(req(optional), v)).toMatchObject([
      {
        path: ['output', 'schema', 'properties', 'a'],
        code: 'not_strict_compatible',
        rule: 'optional_property',
        message: expect.stringMatching(/rule optional_property, at output\.schema\/properties\/a/),
      },
    ]);
    expect(await outputSchemaIssues(req({ type: 'string', pattern: '^(a+)+$' }, 'google'), v)).toMatchObject([
      { path: ['output', 'schema', 'pattern'], code: 'schema_too_complex' },
    ]);
  });
  it('takes other providers’ schemas as given (no strict rules without OpenAI in the chain)', async () => {
    expect(
      await outputSchemaIssues(req({ type: 'object', properties: { a: { type: 'string' } } }, 'google'), v),
    ).toEqual([]);
  });
  it('the repair message lists the errors', () => {
    expect(repairMessage('answer', ['/a must be string'])).toMatch(/"answer"[\s\S]*- \/a must be string/);
  });
});

/** Tenants' schemas meet models' answers off the event loop, within a time and memory budget (hostile-input review). */
describe('IsolatedOutputValidator', () => {
  const v = new IsolatedOutputValidator({ budgetMs: 1500 });
  afterAll(() => v.close());
  // 800 refs to one 800-property definition: inlined refs made code of refs × size (out of memory at intake)
  const props = (prefix: string, n: number, value: unknown) =>
    Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, value]));
  const wide = {
    $defs: { a: { type: 'object', properties: props('p', 800, { type: 'string' }) } },
    properties: props('r', 800, { $ref: '#/$defs/a' }),
  };

  it('compiles a schema of many refs to a wide definition, and checks with it', async () => {
    // (its own validator with a roomy budget: the point is that it compiles at all — 0.6 s alone, more on a loaded CI
    // machine — not how fast)
    const roomy = new IsolatedOutputValidator({ budgetMs: 20_000 });
    try {
      expect(JSON.stringify(wide).length).toBeLessThan(65_536); // under the intake bound: this is what a tenant can send
      expect(await roomy.compile(wide)).toEqual({ ok: true });
      expect(await roomy.check(wide, JSON.stringify({ r0: { p0: 'x' } }))).toEqual({
        ok: true,
        value: { r0: { p0: 'x' } },
      });
      expect(await roomy.check(wide, JSON.stringify({ r0: { p0: 1 } }))).toMatchObject({
        ok: false,
        errors: ['/r0/p0 must be string'],
      });
    } finally {
      await roomy.close();
    }
  });

  it('answers a check that runs over its budget as an invalid answer, and the next check gets a fresh worker', async () => {
    const costly = { type: 'string', pattern: '^\\w*\\w*\\w*\\w*\\w*$' }; // polynomial backtracking: minutes on 400 chars
    const slow = await v.check(costly, JSON.stringify(`${'a'.repeat(400)}!`));
    expect(slow).toMatchObject({ ok: false, errors: [expect.stringMatching(/took longer than 1500 ms/)] });
    expect(await v.check(person, '{"name":"Ada","age":36}')).toEqual({ ok: true, value: { name: 'Ada', age: 36 } });
  });

  it('runs tasks one at a time: a task queued behind a slow one is not charged its time', async () => {
    const costly = { type: 'string', pattern: '^\\w*\\w*\\w*\\w*\\w*$' };
    const [slow, fine] = await Promise.all([
      v.check(costly, JSON.stringify(`${'a'.repeat(400)}!`)),
      v.check(person, '{"name":"Ada","age":1}'),
    ]);
    expect(slow.ok).toBe(false);
    expect(fine).toEqual({ ok: true, value: { name: 'Ada', age: 1 } });
  });
});

/** Tenants' schema work kept apart: one tenant's costly schemas do not hold up another tenant's answers. */
describe('OutputValidatorPool', () => {
  const pool = new OutputValidatorPool(2, { budgetMs: 1500 });
  afterAll(() => pool.close());
  const costly = { type: 'string', pattern: '^\\w*\\w*\\w*\\w*\\w*$' }; // runs to the budget on the text below
  const slowText = JSON.stringify(`${'a'.repeat(400)}!`);
  const person = { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] };

  it("a tenant with costly checks queued holds one lane at most: another tenant's check answers before them", async () => {
    const order: string[] = [];
    const a = [1, 2, 3].map((i) => pool.check(costly, slowText, 'tenant-a').then((r) => (order.push(`a${i}`), r)));
    const b = pool.check(person, '{"name":"Ada"}', 'tenant-b').then((r) => (order.push('b'), r));
    expect(await b).toEqual({ ok: true, value: { name: 'Ada' } });
    expect(order[0]).toBe('b'); // before any of tenant a's (each takes its 1.5 s budget)
    const results = await Promise.all(a);
    expect(results.every((r) => !r.ok)).toBe(true);
    expect(order.slice(1)).toEqual(['a1', 'a2', 'a3']); // a tenant's own tasks keep their order
  });
});
