import { jsonDepth } from '@agentloop/protocol';

/** The largest output schema a run may carry (characters of its JSON text). */
export const OUTPUT_SCHEMA_MAX_CHARS = 65_536;
/** The deepest output schema a run may carry (JSON nesting: `{}` is 1). */
export const OUTPUT_SCHEMA_MAX_DEPTH = 32;

/**
 * Why a regular expression could take exponential time on a backtracking engine (JavaScript's, which the
 * validator uses), or null: a backreference, or a group repeated more than once that contains a variable repetition
 * or an alternation (`(a+)+`, `(a|a)*`, `(\w+\s?)*`, `(a?){25}`). Conservative: some safe patterns are refused too.
 */
export function regexHazard(source: string): string | null {
  if (/\\[1-9]|\\k</.test(source)) return 'it uses a backreference';
  const stack: Array<{ repeats: boolean; alternates: boolean }> = [{ repeats: false, alternates: false }];
  for (let i = 0; i < source.length;) {
    const c = source[i]!;
    if (c === '\\') {
      i += 2;
    } else if (c === '[') {
      i = classEnd(source, i);
    } else if (c === '(') {
      stack.push({ repeats: false, alternates: false });
      i += groupPrefix(source, i + 1) + 1;
    } else if (c === ')' && stack.length > 1) {
      const group = stack.pop()!;
      const q = quantifier(source, i + 1);
      const top = stack[stack.length - 1]!;
      if (q?.many && (group.repeats || group.alternates))
        return `a repeated group contains ${group.repeats ? 'a repetition' : 'an alternation'}`;
      top.repeats ||= group.repeats || !!q?.variable;
      top.alternates ||= group.alternates;
      i += 1 + (q?.length ?? 0);
    } else if (c === '|') {
      stack[stack.length - 1]!.alternates = true;
      i++;
    } else {
      const q = quantifier(source, i);
      if (q) {
        if (q.variable) stack[stack.length - 1]!.repeats = true;
        i += q.length;
      } else i++;
    }
  }
  return null;
}

/** The length of a group's `?:`, `?=`, `?!`, `?<=`, `?<!` or `?<name>` prefix at i (0 for a plain group). */
function groupPrefix(s: string, i: number): number {
  if (s[i] !== '?') return 0;
  if (s[i + 1] === '<' && s[i + 2] !== '=' && s[i + 2] !== '!') {
    const close = s.indexOf('>', i);
    return close < 0 ? 1 : close - i + 1;
  }
  return s[i + 1] === '<' ? 3 : 2;
}

/** The index after a character class `[...]` that starts at i. */
function classEnd(s: string, i: number): number {
  let j = i + 1;
  if (s[j] === '^') j++;
  if (s[j] === ']') j++;
  while (j < s.length && s[j] !== ']') j += s[j] === '\\' ? 2 : 1;
  return j + 1;
}

/**
 * A quantifier at i (`*`, `+`, `?`, `{n}`, `{n,}`, `{n,m}`, with a lazy `?`): its length, whether the count varies,
 * and whether it allows more than one repetition.
 */
function quantifier(s: string, i: number): { length: number; variable: boolean; many: boolean } | null {
  const c = s[i];
  let length = 1;
  let variable = true;
  let many = c !== '?';
  if (c === '{') {
    const m = /^\{(\d+)(,(\d*))?\}/.exec(s.slice(i, i + 24));
    if (!m) return null;
    length = m[0].length;
    variable = m[2] !== undefined && m[3] !== m[1];
    many = m[2] === undefined ? Number(m[1]) > 1 : m[3] === '' || Number(m[3]) > 1;
  } else if (c !== '*' && c !== '+' && c !== '?') return null;
  if (s[i + length] === '?') length++;
  return { length, variable, many };
}

/**
 * What makes an output schema unfit to compile and to validate model answers with, or null: larger than
 * OUTPUT_SCHEMA_MAX_CHARS, deeper than OUTPUT_SCHEMA_MAX_DEPTH, or a `pattern` / `patternProperties` regular
 * expression that could take exponential time (the answer is untrusted text). `path` is a JSON path in the schema.
 */
export function outputSchemaProblem(schema: unknown): { path: string[]; message: string } | null {
  const chars = JSON.stringify(schema)?.length ?? 0;
  if (chars > OUTPUT_SCHEMA_MAX_CHARS)
    return {
      path: [],
      message: `the schema is ${chars} characters of JSON, more than the ${OUTPUT_SCHEMA_MAX_CHARS} allowed`,
    };
  if (jsonDepth(schema, OUTPUT_SCHEMA_MAX_DEPTH + 1) > OUTPUT_SCHEMA_MAX_DEPTH)
    return { path: [], message: `the schema is nested deeper than ${OUTPUT_SCHEMA_MAX_DEPTH} levels` };
  const stack: Array<[unknown, string[]]> = [[schema, []]];
  while (stack.length) {
    const [node, path] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    for (const [k, v] of Object.entries(node)) {
      const sources =
        k === 'pattern' && typeof v === 'string'
          ? [v]
          : k === 'patternProperties' && v && typeof v === 'object' && !Array.isArray(v)
            ? Object.keys(v)
            : [];
      for (const src of sources) {
        const hazard = regexHazard(src);
        if (hazard)
          return {
            path: [...path, k],
            message: `the regular expression ${JSON.stringify(src.slice(0, 80))} could take exponential time to match: ${hazard}`,
          };
      }
      stack.push([v, [...path, k]]);
    }
  }
  return null;
}
