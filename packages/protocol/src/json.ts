/** JSON helpers shared by every boundary: depth limits and canonical (key-sorted) serialisation. */

export const MAX_JSON_DEPTH = 64;
/** The largest tool-call arguments text a model may send (bytes of UTF-16 text, i.e. characters). */
export const MAX_ARGUMENTS_CHARS = 1_048_576;

/** Nesting depth of a parsed JSON value (a scalar is 0, `{}` and `[]` are 1). */
export function jsonDepth(value: unknown, limit = MAX_JSON_DEPTH + 1): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (v === null || typeof v !== 'object') continue;
    const depth = d + 1;
    if (depth > max) max = depth;
    if (max >= limit) return max;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth]);
  }
  return max;
}

/** Nesting depth of a JSON text, measured without parsing it (so hostile input cannot blow the stack). */
export function textJsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 92)
        i++; // backslash: skip the escaped char
      else if (c === 34) inString = false;
    } else if (c === 34) inString = true;
    else if (c === 123 || c === 91) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 125 || c === 93) depth--;
  }
  return max;
}

/** JSON with object keys sorted at every level: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value));
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value && typeof value === 'object') {
    // no prototype: a key named `__proto__` is a key like any other (on a plain object it would set the prototype
    // and vanish from the text, so two different bodies would hash alike)
    const out: Record<string, unknown> = Object.create(null);
    for (const k of Object.keys(value).sort()) out[k] = sortKeys((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

/** Parse JSON or return the fallback. */
export function tryParseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * Why a JSON text from an untrusted source must not be parsed or walked (too large, nested too deep), or null.
 * Checked on the text itself, before anything recursive touches it.
 */
export function jsonTextProblem(text: string, maxChars = MAX_ARGUMENTS_CHARS): string | null {
  if (text.length > maxChars) return `${text.length} characters, more than the ${maxChars} allowed`;
  if (textJsonDepth(text) > MAX_JSON_DEPTH) return `nested deeper than ${MAX_JSON_DEPTH} levels`;
  return null;
}

const DISPLAY_CUT = 4096;

/**
 * Tool-call arguments as shown in events and `pending`: the parsed object, or the raw string when it does not
 * parse. Arguments too large or too deep to walk safely are shown as (the start of) their raw text.
 */
export function argumentsForDisplay(raw: string): unknown {
  if (jsonTextProblem(raw))
    return raw.length > DISPLAY_CUT
      ? `${raw.slice(0, DISPLAY_CUT)}… [${raw.length - DISPLAY_CUT} more characters]`
      : raw;
  const p = tryParseJson(raw);
  return p.ok ? p.value : raw;
}

/**
 * JSON text that every decoder accepts. JSON.stringify writes a lone UTF-16 surrogate (half an emoji cut by a length
 * cap, or sent by a model) as a `\ud800`-style escape, which strict decoders — Redis' Lua cjson among them — refuse;
 * here each becomes U+FFFD. Linear, on the text (the value is never walked again).
 */
export function wellFormedJson(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  // the spec has JSON.stringify write a lone surrogate in lowercase (`\ud800`); its other `\u` escapes (control
  // characters, such as the NUL in a repeat fingerprint) are well formed, and skip the replace
  return text.includes('\\ud') ? text.replace(LONE_SURROGATE_ESCAPE, '$1\\ufffd') : text;
}
const LONE_SURROGATE_ESCAPE = /(?<!\\)((?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/g;
