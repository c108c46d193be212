import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { canonicalJson, jsonTextProblem } from '@agentloop/protocol';

/** What a final answer of a structured-output run is: its parsed value, or why it is not acceptable. */
export type OutputCheck = { ok: true; value: unknown } | { ok: false; errors: string[] };

type Draft = '07' | '2019-09' | '2020-12';
type Compiled = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

/** Keywords only 2019-09 / 2020-12 know: a schema without `$schema` that uses one is read as 2020-12. */
const NEWER_KEYWORDS = new Set([
  'prefixItems',
  '$dynamicRef',
  '$dynamicAnchor',
  'dependentRequired',
  'dependentSchemas',
  'unevaluatedItems',
  'unevaluatedProperties',
  '$recursiveRef',
]);
const MAX_ERRORS = 20;
const MAX_ERROR_CHARS = 300;
/** The longest answer text parsed as JSON (a model's answer is untrusted input). */
const MAX_ANSWER_CHARS = 1_048_576;
const CACHE_SIZE = 256;

function draftOf(schema: Record<string, unknown>): Draft | null {
  const declared = schema.$schema;
  if (typeof declared === 'string') {
    if (/draft-07\/schema/.test(declared)) return '07';
    if (/draft\/2019-09\/schema/.test(declared)) return '2019-09';
    if (/draft\/2020-12\/schema/.test(declared)) return '2020-12';
    return null;
  }
  const stack: unknown[] = [schema];
  while (stack.length) {
    const v = stack.pop();
    if (v === null || typeof v !== 'object') continue;
    for (const [k, child] of Object.entries(v)) {
      if (NEWER_KEYWORDS.has(k)) return '2020-12';
      stack.push(child);
    }
  }
  return '07';
}

/** One ajv error as a line the model (and the run's error) can read: where, what, and the detail that names it. */
function errorLine(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const detail =
    e.keyword === 'additionalProperties'
      ? ` ('${String(p.additionalProperty)}')`
      : e.keyword === 'enum'
        ? ` (${JSON.stringify(p.allowedValues)})`
        : '';
  const line = `${e.instancePath || '/'} ${e.message ?? 'is invalid'}${detail}`;
  return line.length > MAX_ERROR_CHARS ? `${line.slice(0, MAX_ERROR_CHARS)}…` : line;
}

/** The answer text as JSON: whitespace and one ```json fence around the whole answer are tolerated. */
export function parseAnswer(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  const trimmed = text.trim();
  const fenced = /^```[A-Za-z]*[ \t]*\n([\s\S]*?)\n?[ \t]*```$/.exec(trimmed);
  const body = (fenced ? fenced[1]! : trimmed).trim();
  if (!body) return { ok: false, error: 'the answer is empty: a JSON value was expected' };
  const problem = jsonTextProblem(body, MAX_ANSWER_CHARS);
  if (problem) return { ok: false, error: `the answer cannot be read as JSON: ${problem}` };
  try {
    return { ok: true, value: JSON.parse(body) };
  } catch (e) {
    return {
      ok: false,
      error: `the answer is not JSON (${e instanceof Error ? e.message : String(e)}): reply with the JSON value only`,
    };
  }
}

/**
 * JSON Schema validation of structured answers with ajv (draft-07, 2019-09 and 2020-12, by `$schema`; draft-07
 * without one unless a newer keyword shows). Compiled validators are cached by the schema's canonical text (LRU);
 * `format` is not checked (providers enforce the formats they support), `$data` is off, no remote `$ref` is loaded.
 */
export class OutputValidator {
  private readonly ajv: Record<Draft, Ajv> = {
    '07': new Ajv(OutputValidator.options()),
    '2019-09': new Ajv2019(OutputValidator.options()),
    '2020-12': new Ajv2020(OutputValidator.options()),
  };
  private readonly cache = new Map<string, Compiled>();

  private static options() {
    // inlineRefs off: inlining copies a referenced schema into every place that names it, so code grew as refs × size
    // (a 42 KB schema of 800 refs to an 800-property definition took the process out of memory at intake)
    return {
      allErrors: true,
      strict: false,
      validateFormats: false,
      addUsedSchema: false,
      logger: false,
      inlineRefs: false,
    } as const;
  }

  /** Compiles (or finds) the validator of a schema; a schema ajv cannot compile gives ajv's reason. */
  compile(schema: Record<string, unknown>): Compiled {
    const key = canonicalJson(schema);
    const hit = this.cache.get(key);
    if (hit) {
      this.cache.delete(key);
      this.cache.set(key, hit);
      return hit;
    }
    const draft = draftOf(schema);
    let compiled: Compiled;
    if (!draft)
      compiled = {
        ok: false,
        message: `$schema ${JSON.stringify(String(schema.$schema).slice(0, 100))} is not draft-07, 2019-09 or 2020-12`,
      };
    else {
      const ajv = this.ajv[draft];
      const own = structuredClone(schema); // ajv keeps what it compiles until told to forget it
      try {
        compiled = { ok: true, validate: ajv.compile(own) };
      } catch (e) {
        compiled = { ok: false, message: e instanceof Error ? e.message.slice(0, 500) : String(e) };
      } finally {
        ajv.removeSchema(own);
      }
    }
    this.cache.set(key, compiled);
    if (this.cache.size > CACHE_SIZE) this.cache.delete(this.cache.keys().next().value!);
    return compiled;
  }

  /** A final answer's text against the schema: its parsed value, or the errors (bounded) to repair or fail with. */
  check(schema: Record<string, unknown>, text: string): OutputCheck {
    const parsed = parseAnswer(text);
    if (!parsed.ok) return { ok: false, errors: [parsed.error] };
    const compiled = this.compile(schema);
    if (!compiled.ok) return { ok: false, errors: [`the output schema does not compile: ${compiled.message}`] };
    let valid: boolean;
    try {
      valid = compiled.validate(parsed.value) as boolean;
    } catch (e) {
      return {
        ok: false,
        errors: [`the answer could not be validated: ${e instanceof Error ? e.message : String(e)}`],
      };
    }
    if (valid) return { ok: true, value: parsed.value };
    const all = (compiled.validate.errors ?? []).map(errorLine);
    const errors = all.slice(0, MAX_ERRORS);
    if (all.length > MAX_ERRORS) errors.push(`… and ${all.length - MAX_ERRORS} more`);
    return { ok: false, errors: errors.length ? errors : ['the answer does not match the schema'] };
  }
}
