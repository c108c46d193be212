import { WireError } from './openai-wire.js';
import type { MockOutput, MockRequest } from './types.js';

/**
 * Structured output as the real APIs check it, with their own error texts: OpenAI's strict json_schema rules (an
 * independent implementation: the mock must catch what the product's strict-schema module gets wrong), JSON mode's
 * "json" word, DeepSeek's missing json_schema, Gemini 2.x refusing a JSON response together with function calling.
 */

const NOT_PERMITTED = [
  'oneOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  'dependentRequired',
  'dependentSchemas',
  'patternProperties',
  'unevaluatedProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'unevaluatedItems',
  'contains',
  'minContains',
  'maxContains',
  'uniqueItems',
  'minLength',
  'maxLength',
];

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Python's repr of the path tuple, as the API prints it: `()`, `('properties', 'a')`. */
const context = (path: string[]) => `(${path.map((p) => `'${p}'`).join(', ')}${path.length === 1 ? ',' : ''})`;

function complaint(node: unknown, path: string[]): { path: string[]; text: string } | null {
  if (!isObj(node)) return null;
  if (typeof node.$ref === 'string') {
    const others = Object.keys(node).filter((k) => k !== '$ref');
    return others.length
      ? { path, text: `$ref cannot have keywords {${others.map((k) => `'${k}'`).join(', ')}}.` }
      : null;
  }
  for (const k of NOT_PERMITTED) if (k in node) return { path, text: `'${k}' is not permitted.` };
  const types = typeof node.type === 'string' ? [node.type] : Array.isArray(node.type) ? node.type : [];
  if (types.includes('object')) {
    if (node.additionalProperties !== false)
      return { path, text: "'additionalProperties' is required to be supplied and to be false." };
    const required = Array.isArray(node.required) ? node.required : [];
    const missing = Object.keys(isObj(node.properties) ? node.properties : {}).find((k) => !required.includes(k));
    if (missing !== undefined)
      return {
        path,
        text: `'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`,
      };
  }
  const children: Array<[unknown, string[]]> = [];
  for (const key of ['properties', '$defs', 'definitions'])
    if (isObj(node[key])) for (const [name, s] of Object.entries(node[key])) children.push([s, [...path, key, name]]);
  if (node.items !== undefined) children.push([node.items, [...path, 'items']]);
  if (Array.isArray(node.anyOf)) node.anyOf.forEach((s, i) => children.push([s, [...path, 'anyOf', String(i)]]));
  for (const [child, at] of children) {
    const c = complaint(child, at);
    if (c) return c;
  }
  return null;
}

/** OpenAI's verdict on a strict json_schema (null: accepted). */
export function strictSchemaError(name: string, schema: unknown): string | null {
  const rootType = isObj(schema) ? schema.type : undefined;
  if (rootType !== 'object')
    return `Invalid schema for response_format '${name}': schema must be a JSON Schema of 'type: "object"', got 'type: "${rootType === undefined ? 'None' : String(rootType)}"'.`;
  const c = complaint(schema, []);
  return c ? `Invalid schema for response_format '${name}': In context=${context(c.path)}, ${c.text}` : null;
}

const mentionsJson = (body: Record<string, unknown>) =>
  Array.isArray(body.messages) &&
  body.messages.some((m) => /json/i.test(JSON.stringify((m as { content?: unknown })?.content ?? '')));

/** A Chat Completions body's `response_format`, checked like the provider checks it (throws WireError). */
export function chatResponseFormat(
  body: Record<string, unknown>,
  provider: MockRequest['provider'],
): MockOutput | undefined {
  const rf = body.response_format as Record<string, unknown> | undefined | null;
  if (rf === undefined || rf === null) return undefined;
  const type = rf.type;
  if (type === 'text') return undefined;
  if (type === 'json_object') {
    if (!mentionsJson(body))
      throw provider === 'deepseek'
        ? new WireError(
            400,
            "Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'.",
            null,
            'invalid_request_error',
          )
        : new WireError(
            400,
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
            'messages',
          );
    return { type: 'json_object' };
  }
  if (type !== 'json_schema')
    throw new WireError(
      400,
      `Invalid value: '${String(type)}'. Supported values are: 'text', 'json_object', and 'json_schema'.`,
      'response_format.type',
      'invalid_value',
    );
  if (provider === 'deepseek')
    throw new WireError(400, 'This response_format type is unavailable now', null, 'invalid_request_error');
  const js = (rf.json_schema ?? {}) as Record<string, unknown>;
  if (typeof js.name !== 'string')
    throw new WireError(
      400,
      "Missing required parameter: 'response_format.json_schema.name'.",
      'response_format.json_schema.name',
      'missing_required_parameter',
    );
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(js.name))
    throw new WireError(
      400,
      `Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.`,
      'response_format.json_schema.name',
      'invalid_value',
    );
  const strict = js.strict === true;
  if (strict && provider === 'openai') {
    const error = strictSchemaError(js.name, js.schema);
    if (error) throw new WireError(400, error, 'response_format');
  }
  return { type: 'json_schema', name: js.name, schema: js.schema, strict };
}

export const GEMINI_JSON_WITH_TOOLS = "Function calling with a response mime type: 'application/json' is unsupported";

/** A Gemini body's JSON response settings; Gemini 1.x/2.x refuse them together with function declarations. */
export function geminiResponseFormat(body: Record<string, any>, model: string): MockOutput | undefined {
  const gc = (body.generationConfig ?? {}) as Record<string, unknown>;
  const mimeType = typeof gc.responseMimeType === 'string' ? gc.responseMimeType : undefined;
  const schema = gc.responseJsonSchema ?? gc.responseSchema;
  if (mimeType !== 'application/json' && schema === undefined) return undefined;
  const declares = ((body.tools ?? []) as Array<{ functionDeclarations?: unknown[] }>).some(
    (t) => t.functionDeclarations?.length,
  );
  if (declares && /^gemini-[12][.-]/.test(model))
    throw new WireError(400, GEMINI_JSON_WITH_TOOLS, null, null, 'INVALID_ARGUMENT');
  return { type: 'gemini_json', mimeType: mimeType ?? '', schema };
}
