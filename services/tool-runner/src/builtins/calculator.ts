import type { ToolDefinition } from '../tool-definition.js';

/** Arithmetic expressions without eval: a recursive-descent parser over numbers, + - * / % ^, parentheses, functions. */
export function evaluateExpression(source: string): number {
  if (source.length > 10_000) throw new Error('expression too long');
  let pos = 0;
  const FUNCS: Record<string, (...a: number[]) => number> = {
    sqrt: Math.sqrt,
    abs: Math.abs,
    sin: Math.sin,
    cos: Math.cos,
    tan: Math.tan,
    asin: Math.asin,
    acos: Math.acos,
    atan: Math.atan,
    ln: Math.log,
    log: Math.log10,
    log2: Math.log2,
    exp: Math.exp,
    floor: Math.floor,
    ceil: Math.ceil,
    round: Math.round,
    min: Math.min,
    max: Math.max,
    pow: Math.pow,
  };
  const CONSTS: Record<string, number> = { pi: Math.PI, e: Math.E };
  const ws = () => {
    while (pos < source.length && /\s/.test(source[pos]!)) pos++;
  };
  const fail = (what: string): never => {
    throw new Error(`${what} at position ${pos + 1} in '${source}'`);
  };
  const eat = (s: string) => {
    ws();
    if (source.startsWith(s, pos)) {
      pos += s.length;
      return true;
    }
    return false;
  };
  let depth = 0;
  const expr = (): number => {
    if (++depth > 200) fail('expression nested too deeply');
    let v = term();
    for (;;) {
      if (eat('+')) v += term();
      else if (eat('-')) v -= term();
      else break;
    }
    depth--;
    return v;
  };
  const term = (): number => {
    let v = unary();
    for (;;) {
      ws();
      if (source.startsWith('**', pos)) break;
      if (eat('*') || eat('×')) v *= unary();
      else if (eat('/') || eat('÷')) {
        const d = unary();
        if (d === 0) fail('division by zero');
        v /= d;
      } else if (eat('%')) {
        const d = unary();
        if (d === 0) fail('modulo by zero');
        v %= d;
      } else break;
    }
    return v;
  };
  const unary = (): number => {
    if (eat('-')) return -unary();
    if (eat('+')) return unary();
    return power();
  };
  const power = (): number => {
    const base = primary();
    if (eat('^') || eat('**')) return base ** unary(); // right-associative
    return base;
  };
  const primary = (): number => {
    ws();
    if (eat('(')) {
      const v = expr();
      if (!eat(')')) fail("expected ')'");
      return v;
    }
    const num = /^(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?/.exec(source.slice(pos));
    if (num) {
      pos += num[0].length;
      return Number(num[0]);
    }
    const id = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(source.slice(pos));
    if (id) {
      pos += id[0].length;
      const name = id[0].toLowerCase();
      if (name in CONSTS) return CONSTS[name]!;
      const fn = FUNCS[name];
      if (!fn) fail(`unknown name '${id[0]}'`);
      if (!eat('(')) fail(`expected '(' after ${name}`);
      const args: number[] = [];
      if (!eat(')')) {
        do args.push(expr());
        while (eat(','));
        if (!eat(')')) fail("expected ')'");
      }
      return fn!(...args);
    }
    return fail(pos >= source.length ? 'unexpected end of expression' : `unexpected '${source[pos]}'`);
  };
  const v = expr();
  ws();
  if (pos < source.length) fail(`unexpected '${source[pos]}'`);
  if (!Number.isFinite(v)) throw new Error(`the result is not a finite number (${v})`);
  return v;
}

export const calculator: ToolDefinition = {
  name: 'calculator',
  description:
    'Evaluate an arithmetic expression: + - * / % ^, parentheses, sqrt, abs, sin, cos, tan, ln, log, exp, floor, ceil, round, min, max, pow, pi, e.',
  parameters: {
    type: 'object',
    properties: { expression: { type: 'string', minLength: 1, maxLength: 10000, description: 'for example (2+3)*4' } },
    required: ['expression'],
    additionalProperties: false,
  },
  sideEffect: 'read',
  pool: 'default',
  timeoutMs: 5000,
  async execute(args) {
    const value = evaluateExpression(String((args as { expression: string }).expression));
    return { value: Number.isInteger(value) ? value : Number(value.toPrecision(15)) };
  },
};
