import { describe, expect, it } from 'vitest';
import { OUTPUT_SCHEMA_MAX_CHARS, OUTPUT_SCHEMA_MAX_DEPTH, outputSchemaProblem, regexHazard } from './schema-bounds.js';

describe('regexHazard (patterns a backtracking engine could take exponential time on)', () => {
  const safe = [
    '^[a-z]+$',
    '^\\d{3}-\\d{4}$',
    '^(?:\\d{3}-){2}\\d{4}$',
    '^(foo|bar)$',
    '^[(]+[)*]$',
    '^a+b+c*$',
    '\\(a+\\)+',
    '^(?<year>\\d{4})-(?<m>\\d{2})$',
    '^(ab)+$',
    '^(?=x)[a-z]{1,8}$',
  ];
  const hazardous = [
    '^(a+)+$',
    '^(a|a)*$',
    '^(\\w+\\s?)*$',
    '^((ab)*c)*$',
    '^(a{1,3})+$',
    '(x+x+)+y',
    '^(a?){25}a{25}$',
    '^(a)\\1$',
    '^(?<x>a)\\k<x>$',
    '^(?:a|b)+$',
  ];
  for (const p of safe) it(`lets ${p} through`, () => expect(regexHazard(p)).toBeNull());
  for (const p of hazardous) it(`refuses ${p}`, () => expect(regexHazard(p)).toEqual(expect.any(String)));

  it('the refused patterns really are slow on a backtracking engine, the allowed ones are not (measured)', () => {
    const t0 = performance.now();
    /^(a+)+$/.test(`${'a'.repeat(21)}!`);
    const slow = performance.now() - t0;
    // the fastest of a few samples: one sample may include a preemption of this process by a loaded machine
    const fast = Math.min(
      ...Array.from({ length: 5 }, () => {
        const t1 = performance.now();
        /^(ab)+$/.test(`${'ab'.repeat(5000)}!`);
        return performance.now() - t1;
      }),
    );
    expect(fast).toBeLessThan(slow);
  });
});

describe('outputSchemaProblem', () => {
  it('accepts an ordinary schema', () => {
    expect(
      outputSchemaProblem({ type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } } }),
    ).toBeNull();
  });
  it('refuses a schema over the size bound', () => {
    const big = { type: 'object', description: 'x'.repeat(OUTPUT_SCHEMA_MAX_CHARS) };
    expect(outputSchemaProblem(big)).toMatchObject({
      path: [],
      message: expect.stringMatching(/more than the 65536 allowed/),
    });
  });
  it('refuses a schema over the depth bound', () => {
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < OUTPUT_SCHEMA_MAX_DEPTH; i++) deep = { type: 'array', items: deep };
    expect(outputSchemaProblem(deep)?.message).toMatch(/nested deeper than 32 levels/);
  });
  it('names the path of a hazardous pattern, in pattern and in patternProperties', () => {
    expect(
      outputSchemaProblem({ type: 'object', properties: { a: { type: 'string', pattern: '^(a+)+$' } } })?.path,
    ).toEqual(['properties', 'a', 'pattern']);
    expect(
      outputSchemaProblem({ type: 'object', patternProperties: { '^(x|y)*$': { type: 'string' } } })?.path,
    ).toEqual(['patternProperties']);
  });
});
