import { describe, expect, it } from 'vitest';
import { evaluateExpression } from './calculator.js';

describe('calculator (a parser, not eval)', () => {
  it.each([
    ['17*23', 391],
    ['(2+3)*4', 20],
    ['2^3^2', 512],
    ['2**10', 1024],
    ['-3^2', -9],
    ['10 % 4', 2],
    ['7/2', 3.5],
    ['sqrt(16) + abs(-2)', 6],
    ['max(1, 5, 3)', 5],
    ['1.5e3', 1500],
    ['2*pi', 2 * Math.PI],
    ['  ( 1 + 2 ) * ( 3 + 4 ) ', 21],
  ])('%s = %d', (expr, value) => {
    expect(evaluateExpression(expr)).toBeCloseTo(value, 10);
  });

  it.each(['1/0', '2+', 'process.exit(1)', 'constructor', '1;2', '((1)', 'foo(1)', ''])('refuses %j', (expr) => {
    expect(() => evaluateExpression(expr)).toThrow();
  });

  it('refuses pathological nesting without blowing the stack', () => {
    expect(() => evaluateExpression(`${'('.repeat(2000)}1${')'.repeat(2000)}`)).toThrow(/nested too deeply/);
  });
});
