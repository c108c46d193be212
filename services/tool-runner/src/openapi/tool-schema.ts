import type { ToolDefinition } from '../tool-definition.js';
import type { OperationInfo, ParameterInfo } from './document.js';

type Schema = Record<string, unknown>;

/** Where each property of a tool's arguments goes in the request. */
export interface ArgumentPlan {
  params: Array<ParameterInfo & { property: string }>;
  /** The property holding the request body, if the operation takes one. */
  body?: { property: string; mediaType: string };
}

/** Headers a parameter may not set: the ones OpenAPI says are ignored, the transport's own, and the entry's. */
const RESERVED_HEADERS = new Set([
  'accept',
  'content-type',
  'authorization',
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'cookie',
  'idempotency-key',
  'user-agent',
]);

/**
 * SPEC §6: an operation's parameters and request body as one JSON Schema object — each parameter a property under its
 * own name (prefixed with its location, `query_id`, when two share a name or one is called `body`), the JSON body
 * under `body`. Header parameters the transport or the entry's configured headers set are left out.
 */
export function toolSchema(
  op: OperationInfo,
  configuredHeaders: Record<string, string>,
): { parameters: Schema; plan: ArgumentPlan } {
  const configured = new Set(Object.keys(configuredHeaders).map((h) => h.toLowerCase()));
  const params = op.parameters.filter(
    (p) => p.in !== 'header' || (!RESERVED_HEADERS.has(p.name.toLowerCase()) && !configured.has(p.name.toLowerCase())),
  );
  const count = new Map<string, number>();
  for (const p of params) count.set(p.name, (count.get(p.name) ?? 0) + 1);
  const properties: Record<string, Schema> = {};
  const required: string[] = [];
  const plan: ArgumentPlan = { params: [] };
  for (const p of params) {
    const property = count.get(p.name)! > 1 || (p.name === 'body' && op.body) ? `${p.in}_${p.name}` : p.name;
    properties[property] = { ...jsonSchemaOf(p.schema), ...(p.description ? { description: p.description } : {}) };
    if (p.required) required.push(property);
    plan.params.push({ ...p, property });
  }
  if (op.body) {
    properties.body = {
      ...jsonSchemaOf(op.body.schema),
      ...(op.body.description ? { description: op.body.description } : {}),
    };
    if (op.body.required) required.push('body');
    plan.body = { property: 'body', mediaType: op.body.mediaType };
  }
  return {
    parameters: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
    plan,
  };
}

const DROPPED = new Set(['$schema', '$id', 'xml', 'externalDocs', 'example', 'discriminator']);

/**
 * An OpenAPI schema object as the JSON Schema the registry compiles (ajv, draft-07) and models read: 3.0's
 * `nullable` as a "null" type, documentation-only keywords dropped, and a `$ref` left by a circular schema (or a tree
 * deeper than 32 levels) as an open schema.
 */
export function jsonSchemaOf(schema: unknown, depth = 0): Schema {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return {};
  const s = schema as Schema;
  if (typeof s.$ref === 'string' || depth > 32)
    return { description: `(recursive: ${typeof s.$ref === 'string' ? s.$ref.split('/').pop() : 'nested too deep'})` };
  const out: Schema = {};
  for (const [k, v] of Object.entries(s)) {
    if (DROPPED.has(k) || k === 'nullable') continue;
    if (k === 'properties' && v && typeof v === 'object')
      out[k] = Object.fromEntries(Object.entries(v).map(([name, sub]) => [name, jsonSchemaOf(sub, depth + 1)]));
    else if (
      (k === 'items' || k === 'additionalProperties' || k === 'not') &&
      v &&
      typeof v === 'object' &&
      !Array.isArray(v)
    )
      out[k] = jsonSchemaOf(v, depth + 1);
    else if ((k === 'allOf' || k === 'anyOf' || k === 'oneOf' || k === 'prefixItems') && Array.isArray(v))
      out[k] = v.map((sub) => jsonSchemaOf(sub, depth + 1));
    else out[k] = v;
  }
  if (s.nullable === true && out.type !== undefined)
    out.type = [...new Set([...(Array.isArray(out.type) ? out.type : [out.type]), 'null'])];
  return out;
}

/** SPEC §6: GET is `read` unless the entry says otherwise, every other method `external`; retried after a crash when idempotent. */
export function sideEffectOf(
  method: string,
  configured: ToolDefinition['sideEffect'] | undefined,
): Pick<ToolDefinition, 'sideEffect' | 'retry'> {
  const sideEffect = configured ?? (method === 'GET' ? 'read' : 'external');
  // RFC 9110 §9.2.2: a request with an idempotent method may be sent again; POST and PATCH are answered outcome_unknown
  const idempotent = ['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE', 'TRACE'].includes(method);
  return { sideEffect, retry: sideEffect === 'read' || idempotent ? 'safe' : 'never' };
}

/** A tool's description: the operation's summary and description, bounded (it goes into every model request). */
export function descriptionOf(op: OperationInfo): string {
  const text = [op.summary, op.description].filter(Boolean).join('\n\n') || `${op.method} ${op.path}`;
  return text.length > 4000 ? `${text.slice(0, 3999)}…` : text;
}
