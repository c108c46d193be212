import { describe, expect, it } from 'vitest';
import { providerReadyOutput, toStrictSchema, type StrictRule } from './strict-schema.js';

const obj = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  ...extra,
});

describe('toStrictSchema (OpenAI strict mode, lossless only)', () => {
  it('adds additionalProperties: false to every object that lists its properties, nested ones included', () => {
    const schema = obj(
      {
        name: { type: 'string', description: 'who' },
        tags: { type: 'array', items: obj({ k: { type: 'string' } }), maxItems: 3 },
        pick: { anyOf: [obj({ a: { type: 'integer', minimum: 0 } }), { type: 'null' }] },
        when: { type: 'string', format: 'date-time' },
        node: { $ref: '#/$defs/node' },
      },
      { $defs: { node: obj({ next: { anyOf: [{ $ref: '#/$defs/node' }, { type: 'null' }] } }) } },
    );
    const before = structuredClone(schema);
    const r = toStrictSchema(schema);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(schema).toEqual(before); // the input is not modified
    const s = r.schema as any;
    expect(s.additionalProperties).toBe(false);
    expect(s.properties.tags.items.additionalProperties).toBe(false);
    expect(s.properties.pick.anyOf[0].additionalProperties).toBe(false);
    expect(s.$defs.node.additionalProperties).toBe(false);
    expect(s.properties.name).toEqual({ type: 'string', description: 'who' });
    expect(s.properties.tags.maxItems).toBe(3);
  });

  it('is idempotent, keeps an explicit additionalProperties: false, and drops annotations next to a $ref', () => {
    const once = toStrictSchema(
      obj(
        { a: { $ref: '#/$defs/a', description: 'the a' } },
        { additionalProperties: false, $defs: { a: { type: 'string' } } },
      ),
    );
    expect(once.ok).toBe(true);
    if (!once.ok) return;
    expect((once.schema as any).properties.a).toEqual({ $ref: '#/$defs/a' });
    expect(toStrictSchema(once.schema)).toEqual(once);
  });

  it('keeps a key named __proto__ as a property, never as a prototype', () => {
    const schema = JSON.parse(
      '{"type":"object","properties":{"__proto__":{"type":"string"}},"required":["__proto__"]}',
    );
    const r = toStrictSchema(schema);
    expect(r.ok && Object.keys((r.schema as any).properties)).toEqual(['__proto__']);
    expect(r.ok && Object.getPrototypeOf((r.schema as any).properties)).toBe(Object.prototype);
  });

  const refused: Array<[string, unknown, StrictRule, string[]]> = [
    [
      'an optional property',
      { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a'] },
      'optional_property',
      ['properties', 'b'],
    ],
    [
      'a nested optional property',
      obj({ o: { type: 'object', properties: { x: { type: 'number' } } } }),
      'optional_property',
      ['properties', 'o', 'properties', 'x'],
    ],
    [
      'additionalProperties: true',
      obj({ a: { type: 'string' } }, { additionalProperties: true }),
      'additional_properties',
      ['additionalProperties'],
    ],
    [
      'additionalProperties as a schema (a map)',
      obj({ m: { type: 'object', properties: {}, additionalProperties: { type: 'string' } } }),
      'additional_properties',
      ['properties', 'm', 'additionalProperties'],
    ],
    ['a free-form object', obj({ any: { type: 'object' } }), 'free_form_object', ['properties', 'any']],
    [
      'oneOf',
      obj({ a: { oneOf: [{ type: 'string' }, { type: 'number' }] } }),
      'unsupported_keyword',
      ['properties', 'a', 'oneOf'],
    ],
    [
      'allOf',
      obj({ a: { type: 'string', allOf: [{ minLength: 1 }] } }),
      'unsupported_keyword',
      ['properties', 'a', 'allOf'],
    ],
    [
      'minLength',
      obj({ a: { type: 'string', minLength: 2 } }),
      'unsupported_keyword',
      ['properties', 'a', 'minLength'],
    ],
    [
      'uniqueItems',
      obj({ a: { type: 'array', items: { type: 'string' }, uniqueItems: true } }),
      'unsupported_keyword',
      ['properties', 'a', 'uniqueItems'],
    ],
    [
      'patternProperties',
      obj({
        a: {
          type: 'object',
          properties: { x: { type: 'string' } },
          required: ['x'],
          patternProperties: { '^y': { type: 'string' } },
        },
      }),
      'unsupported_keyword',
      ['properties', 'a', 'patternProperties'],
    ],
    [
      'an unknown format',
      obj({ u: { type: 'string', format: 'uri' } }),
      'unsupported_format',
      ['properties', 'u', 'format'],
    ],
    ['a root array', { type: 'array', items: { type: 'string' } }, 'root_not_object', []],
    ['a root anyOf', { anyOf: [obj({ a: { type: 'string' } }), obj({ b: { type: 'string' } })] }, 'root_any_of', []],
    ['an untyped property', obj({ a: { description: 'anything' } }), 'untyped_schema', ['properties', 'a']],
    ['a boolean schema', obj({ a: true }), 'not_a_schema', ['properties', 'a']],
    [
      'tuple items',
      obj({ a: { type: 'array', items: [{ type: 'string' }] } }),
      'items_not_schema',
      ['properties', 'a', 'items'],
    ],
    ['a remote $ref', obj({ a: { $ref: 'https://example.com/s.json' } }), 'remote_ref', ['properties', 'a', '$ref']],
    [
      'a $ref with a constraint next to it',
      obj({ a: { $ref: '#/$defs/x', minItems: 1 } }, { $defs: { x: { type: 'array', items: { type: 'string' } } } }),
      'ref_with_keywords',
      ['properties', 'a', 'minItems'],
    ],
    ['an unknown type name', obj({ a: { type: 'text' } }), 'unsupported_type', ['properties', 'a', 'type']],
    [
      'too many enum values',
      obj({ a: { type: 'string', enum: Array.from({ length: 1001 }, (_, i) => `v${i}`) } }),
      'too_many_enum_values',
      ['properties', 'a', 'enum'],
    ],
  ];
  for (const [name, schema, rule, path] of refused)
    it(`refuses ${name} (${rule})`, () => {
      const r = toStrictSchema(schema);
      expect(r).toMatchObject({ ok: false, rule, path });
      if (!r.ok) expect(r.message.length).toBeGreaterThan(10);
    });
});

describe('providerReadyOutput', () => {
  const schema = obj({ a: { type: 'string' } });
  it('gives the strict form when the chain includes OpenAI, the schema as given otherwise, and names it "answer" by default', () => {
    expect(providerReadyOutput({ schema }, [{ provider: 'google' }, { provider: 'openai' }])).toEqual({
      name: 'answer',
      schema: { ...schema, additionalProperties: false },
    });
    expect(providerReadyOutput({ schema, name: 'x' }, [{ provider: 'google' }, { provider: 'deepseek' }])).toEqual({
      name: 'x',
      schema,
    });
  });
});
