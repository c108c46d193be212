/**
 * Keeping the entry's secrets (its header values) out of what a response brings back. A server may echo a credential
 * as it is, or JSON-escaped (`\/`, `\uXXXX`, ...): the raw text is matched with every character in either form, and a
 * parsed JSON body is walked (every string and key) after parsing.
 */

const SHORT_ESCAPES: Record<string, string> = {
  '"': '\\\\"',
  '\\': '\\\\\\\\',
  '/': '\\\\/',
  '\b': '\\\\b',
  '\f': '\\\\f',
  '\n': '\\\\n',
  '\r': '\\\\r',
  '\t': '\\\\t',
};

/** One code unit as it may appear in a JSON text: itself, `\uXXXX` (any case), or its short escape. */
function unitPattern(unit: string): string {
  const code = unit.charCodeAt(0).toString(16).padStart(4, '0');
  const hex = [...code].map((h) => (/[a-f]/.test(h) ? `[${h}${h.toUpperCase()}]` : h)).join('');
  const literal = unit.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
  return `(?:${literal}|\\\\u${hex}${SHORT_ESCAPES[unit] ? `|${SHORT_ESCAPES[unit]}` : ''})`;
}

export interface Redactor {
  /** Every occurrence, literal or JSON-escaped, replaced by `[redacted]`. */
  text(s: string): string;
  /** A parsed JSON value with every string and key redacted. */
  value(v: unknown): unknown;
  /** `s` cut to `maxBytes` (UTF-8) with every secret that starts before the cut redacted whole (the caller reads `margin` bytes more). */
  cut(s: string, maxBytes: number): string;
  /** The bytes past a cut a secret starting before it may take (6 a code unit: `\uXXXX`). */
  margin: number;
}

export function redactor(secrets: string[]): Redactor {
  const sorted = [...new Set(secrets)].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
  const pattern = sorted.length
    ? new RegExp(sorted.map((s) => s.split('').map(unitPattern).join('')).join('|'), 'g')
    : undefined;
  const text = (s: string) => (pattern ? s.replace(pattern, '[redacted]') : s);
  const value = (v: unknown): unknown => {
    if (typeof v === 'string') return text(v);
    if (Array.isArray(v)) return v.map(value);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [text(k), value(x)]));
    return v;
  };
  const cut = (s: string, maxBytes: number) => {
    const end = cutIndex(s, maxBytes);
    if (!pattern) return s.slice(0, end);
    let out = '';
    let at = 0;
    for (const m of s.matchAll(pattern)) {
      if (m.index >= end) break;
      out += `${s.slice(at, m.index)}[redacted]`;
      at = m.index + m[0].length;
    }
    return at >= end ? out : out + s.slice(at, end);
  };
  return { text, value, cut, margin: 6 * (sorted[0]?.length ?? 0) };
}

/** The index in `s` where its first `maxBytes` UTF-8 bytes end (never inside a character). */
function cutIndex(s: string, maxBytes: number): number {
  let bytes = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.codePointAt(i)!;
    const n = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
    if (bytes + n > maxBytes) return i;
    bytes += n;
    if (c >= 0x10000) i++;
  }
  return s.length;
}
