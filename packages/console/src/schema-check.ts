/**
 * The arguments of an approval, checked in the browser against the tool's JSON Schema before they are sent. The CSP
 * forbids eval, so no schema compiler (ajv generates code): this covers the keywords tool schemas use (type, required,
 * properties, additionalProperties, enum, const, string and number bounds, pattern, items, array bounds). Anything it
 * does not know it lets through: the server validates again and its 400 is shown.
 */
export type JsonSchema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(want: string, v: unknown): boolean {
  const t = typeOf(v);
  return want === t || (want === 'number' && t === 'integer');
}

function check(schema: unknown, v: unknown, path: string, out: string[]): void {
  if (!isObject(schema)) return;
  const at = path || '(arguments)';
  const types = schema.type === undefined ? [] : [schema.type].flat().map(String);
  if (types.length && !types.some((t) => typeMatches(t, v))) {
    out.push(`${at}: must be ${types.join(' or ')}, not ${typeOf(v)}`);
    return;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v)))
    out.push(`${at}: must be one of ${schema.enum.map((e) => JSON.stringify(e)).join(', ')}`);
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(v))
    out.push(`${at}: must be ${JSON.stringify(schema.const)}`);
  if (typeof v === 'string') {
    if (typeof schema.minLength === 'number' && v.length < schema.minLength)
      out.push(`${at}: at least ${schema.minLength} characters`);
    if (typeof schema.maxLength === 'number' && v.length > schema.maxLength)
      out.push(`${at}: at most ${schema.maxLength} characters`);
    if (typeof schema.pattern === 'string') {
      let re: RegExp | null = null;
      try {
        re = new RegExp(schema.pattern, 'u');
      } catch {}
      if (re && !re.test(v)) out.push(`${at}: must match ${schema.pattern}`);
    }
  }
  if (typeof v === 'number') {
    if (typeof schema.minimum === 'number' && v < schema.minimum) out.push(`${at}: at least ${schema.minimum}`);
    if (typeof schema.maximum === 'number' && v > schema.maximum) out.push(`${at}: at most ${schema.maximum}`);
  }
  if (Array.isArray(v)) {
    if (typeof schema.minItems === 'number' && v.length < schema.minItems)
      out.push(`${at}: at least ${schema.minItems} items`);
    if (typeof schema.maxItems === 'number' && v.length > schema.maxItems)
      out.push(`${at}: at most ${schema.maxItems} items`);
    if (isObject(schema.items)) v.forEach((item, i) => check(schema.items, item, `${path}[${i}]`, out));
  }
  if (isObject(v)) {
    const props = isObject(schema.properties) ? schema.properties : {};
    for (const name of Array.isArray(schema.required) ? schema.required : [])
      if (typeof name === 'string' && !Object.hasOwn(v, name))
        out.push(`${path ? `${path}.` : ''}${name}: is required`);
    for (const [k, val] of Object.entries(v)) {
      const p = path ? `${path}.${k}` : k;
      if (Object.hasOwn(props, k)) check(props[k], val, p, out);
      else if (schema.additionalProperties === false) out.push(`${p}: is not allowed (no such parameter)`);
      else if (isObject(schema.additionalProperties)) check(schema.additionalProperties, val, p, out);
    }
  }
}

/** The problems of `value` against `schema`, one line each (empty: valid as far as this check goes). */
export function schemaProblems(schema: unknown, value: unknown): string[] {
  const out: string[] = [];
  check(schema, value, '', out);
  return out;
}

/** Parses the edited JSON text of arguments: the object, or why it is not one. */
export function parseArguments(
  text: string,
): { ok: true; value: Record<string, unknown> } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not valid JSON: ${(e as Error).message}` };
  }
  return isObject(value) ? { ok: true, value } : { ok: false, error: 'the arguments must be a JSON object' };
}
