import type { ModelSpec } from '@agentloop/protocol';

/**
 * OpenAI strict structured output (Chat `response_format` and Responses `text.format` json_schema with
 * `strict: true`) accepts a subset of JSON Schema: the root is an object, every object lists its properties, has
 * `additionalProperties: false` and requires every property, and only some keywords are allowed. This turns a
 * user's schema into that form where it can be done without changing what the schema means — it adds
 * `additionalProperties: false` where it is absent (the properties listed are the ones wanted) and drops
 * annotations next to a `$ref` — and says which rule it cannot meet, and where, otherwise. Pure; the input is never
 * modified.
 */

export type StrictRule =
  | 'not_a_schema'
  | 'root_not_object'
  | 'root_any_of'
  | 'untyped_schema'
  | 'unsupported_type'
  | 'unsupported_keyword'
  | 'unsupported_format'
  | 'optional_property'
  | 'additional_properties'
  | 'free_form_object'
  | 'items_not_schema'
  | 'remote_ref'
  | 'ref_with_keywords'
  | 'too_many_properties'
  | 'too_many_enum_values';

export type StrictResult =
  { ok: true; schema: Record<string, unknown> } | { ok: false; rule: StrictRule; path: string[]; message: string };

/** What the provider documents (platform.openai.com, Structured Outputs, "Supported schemas"). */
export const STRICT_FORMATS: readonly string[] = [
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'uuid',
];
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'object', 'array', 'null']);
/** Keywords that say nothing about validity: kept (dropped next to a $ref, where the provider refuses them). */
const ANNOTATIONS = new Set([
  'title',
  'description',
  '$comment',
  'examples',
  'default',
  'deprecated',
  'readOnly',
  'writeOnly',
  '$schema',
  '$id',
]);
/** Constraints the provider enforces, kept as they are. */
const CONSTRAINTS = new Set([
  'enum',
  'const',
  'pattern',
  'multipleOf',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'minItems',
  'maxItems',
  'required',
]);
const MAX_PROPERTIES = 5000;
const MAX_ENUM_VALUES = 1000;

class Refusal extends Error {
  constructor(
    readonly rule: StrictRule,
    readonly path: string[],
    message: string,
  ) {
    super(message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const typesOf = (node: Record<string, unknown>): string[] =>
  typeof node.type === 'string' ? [node.type] : Array.isArray(node.type) ? node.type.map(String) : [];

interface Counts {
  properties: number;
  enumValues: number;
}

function walk(node: unknown, path: string[], counts: Counts, root: boolean): Record<string, unknown> {
  if (!isObject(node))
    throw new Refusal(
      'not_a_schema',
      path,
      'a schema must be a JSON object here (true/false schemas cannot be strict)',
    );
  if ('$ref' in node) return ref(node, path);
  const types = typesOf(node);
  for (const t of types)
    if (!TYPES.has(t))
      throw new Refusal('unsupported_type', [...path, 'type'], `type '${t}' is not a JSON Schema type`);
  if (root && (types.length !== 1 || types[0] !== 'object'))
    throw new Refusal(
      node.anyOf !== undefined ? 'root_any_of' : 'root_not_object',
      path,
      'the root must be one object schema (type: "object"), not a union or another type',
    );
  const out: Array<[string, unknown]> = [];
  for (const [k, v] of Object.entries(node)) {
    const at = [...path, k];
    if (k === 'type' || ANNOTATIONS.has(k)) out.push([k, v]);
    else if (CONSTRAINTS.has(k)) {
      if (k === 'enum' && Array.isArray(v) && (counts.enumValues += v.length) > MAX_ENUM_VALUES)
        throw new Refusal('too_many_enum_values', at, `more than ${MAX_ENUM_VALUES} enum values in the schema`);
      out.push([k, v]);
    } else if (k === 'format') {
      if (typeof v !== 'string' || !STRICT_FORMATS.includes(v))
        throw new Refusal(
          'unsupported_format',
          at,
          `format '${String(v)}' is not one strict mode supports (${STRICT_FORMATS.join(', ')})`,
        );
      out.push([k, v]);
    } else if (k === 'properties') {
      if (!isObject(v)) throw new Refusal('not_a_schema', at, 'properties must be an object of schemas');
      if ((counts.properties += Object.keys(v).length) > MAX_PROPERTIES)
        throw new Refusal('too_many_properties', at, `more than ${MAX_PROPERTIES} object properties in the schema`);
      out.push([
        k,
        Object.fromEntries(Object.entries(v).map(([name, s]) => [name, walk(s, [...at, name], counts, false)])),
      ]);
    } else if (k === 'additionalProperties') {
      if (v !== false)
        throw new Refusal(
          'additional_properties',
          at,
          'additionalProperties must be false (true or a schema allows properties strict mode cannot generate)',
        );
      out.push([k, false]);
    } else if (k === 'items') {
      if (!isObject(v))
        throw new Refusal(
          'items_not_schema',
          at,
          'items must be one schema (tuples and boolean items cannot be strict)',
        );
      out.push([k, walk(v, at, counts, false)]);
    } else if (k === 'anyOf') {
      if (!Array.isArray(v) || !v.length)
        throw new Refusal('not_a_schema', at, 'anyOf must be a non-empty array of schemas');
      out.push([k, v.map((s, i) => walk(s, [...at, String(i)], counts, false))]);
    } else if (k === '$defs' || k === 'definitions') {
      if (!isObject(v)) throw new Refusal('not_a_schema', at, `${k} must be an object of schemas`);
      out.push([
        k,
        Object.fromEntries(Object.entries(v).map(([name, s]) => [name, walk(s, [...at, name], counts, false)])),
      ]);
    } else throw new Refusal('unsupported_keyword', at, `keyword '${k}' is not supported by strict mode`);
  }
  if (!types.length && !('enum' in node) && !('const' in node) && !('anyOf' in node))
    throw new Refusal(
      'untyped_schema',
      path,
      'a schema without type (or enum, const, anyOf, $ref) allows any value, which strict mode cannot express',
    );
  const result = Object.fromEntries(out) as Record<string, unknown>;
  if (types.includes('object') || 'properties' in node) objectRules(node, result, path);
  return result;
}

/** Every object lists its properties, requires all of them, and allows no others. */
function objectRules(node: Record<string, unknown>, result: Record<string, unknown>, path: string[]): void {
  const names = isObject(node.properties) ? Object.keys(node.properties) : [];
  if (node.additionalProperties === undefined) {
    if (!names.length)
      throw new Refusal(
        'free_form_object',
        path,
        'an object schema without properties allows any object; strict mode would only allow {} (list its properties, or set additionalProperties: false)',
      );
    result.additionalProperties = false;
  }
  const required = Array.isArray(node.required) ? node.required.map(String) : [];
  const optional = names.find((n) => !required.includes(n));
  if (optional !== undefined)
    throw new Refusal(
      'optional_property',
      [...path, 'properties', optional],
      `property '${optional}' is not in required: strict mode requires every property (make it nullable, e.g. type: ["string", "null"], instead of optional)`,
    );
}

function ref(node: Record<string, unknown>, path: string[]): Record<string, unknown> {
  const target = node.$ref;
  if (typeof target !== 'string' || !target.startsWith('#'))
    throw new Refusal('remote_ref', [...path, '$ref'], '$ref must point into this schema (#, #/$defs/…)');
  for (const k of Object.keys(node))
    if (k !== '$ref' && !ANNOTATIONS.has(k))
      throw new Refusal('ref_with_keywords', [...path, k], `'${k}' next to a $ref is refused by strict mode`);
  return { $ref: target };
}

/** The strict form of a user's schema, or the rule it breaks and where (a JSON path inside the schema). */
export function toStrictSchema(schema: unknown): StrictResult {
  try {
    return { ok: true, schema: walk(schema, [], { properties: 0, enumValues: 0 }, true) };
  } catch (e) {
    if (e instanceof Refusal) return { ok: false, rule: e.rule, path: e.path, message: e.message };
    throw e;
  }
}

/** Whether a chain (model and fallbacks) includes OpenAI itself, whose strict mode the schema must then meet. */
export const chainNeedsStrictSchema = (chain: readonly Pick<ModelSpec, 'provider'>[]): boolean =>
  chain.some((m) => m.provider === 'openai');

/**
 * The `output` of a run's model requests: the strict form when the chain includes OpenAI (intake checked that it
 * exists; it means the same, so other providers of the chain take it too), else the schema as the user gave it.
 */
export function providerReadyOutput(
  output: { schema: Record<string, unknown>; name?: string },
  chain: readonly Pick<ModelSpec, 'provider'>[],
): { schema: Record<string, unknown>; name: string } {
  const name = output.name ?? 'answer';
  if (!chainNeedsStrictSchema(chain)) return { schema: output.schema, name };
  const strict = toStrictSchema(output.schema);
  return { schema: strict.ok ? strict.schema : output.schema, name };
}
