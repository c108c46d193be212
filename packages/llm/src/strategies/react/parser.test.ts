import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ReactStreamParser, parseReact, type ReactStep } from './parser.js';
import { actionArguments, firstJsonValue } from './action-input.js';

function streamed(chunks: string[]): { step: ReactStep; reasoning: string; answer: string } {
  let reasoning = '';
  let answer = '';
  const p = new ReactStreamParser({ reasoning: (t) => (reasoning += t), answer: (t) => (answer += t) });
  for (const c of chunks) p.push(c);
  return { step: p.end(), reasoning, answer };
}

describe('ReAct parser', () => {
  it('stays linear on hostile whitespace (80,000 spaces inside a final answer, streamed in pieces)', () => {
    const p = new ReactStreamParser({});
    const t0 = performance.now();
    p.push('Final Answer: yes');
    for (let i = 0; i < 800; i++) p.push(' '.repeat(100));
    p.push('done');
    expect(p.end()).toMatchObject({ kind: 'answer' });
    expect(performance.now() - t0).toBeLessThan(2000);
  });
  it('reads an action with a JSON input whose strings hold braces and quotes', () => {
    const step = parseReact(
      'Thought: I must look it up.\nAction: search\nAction Input: {"q": "a } tricky \\" {string", "n": 2}\n',
    );
    expect(step).toEqual({
      kind: 'action',
      reasoning: 'I must look it up.',
      name: 'search',
      input: '{"q": "a } tricky \\" {string", "n": 2}',
    });
  });

  it('is case-insensitive and tolerates markdown decoration and underscores', () => {
    expect(parseReact('THOUGHT: x\n**action:** `calculator`\naction_input: {"expression":"1+1"}')).toMatchObject({
      kind: 'action',
      name: 'calculator',
      input: '{"expression":"1+1"}',
    });
    expect(parseReact('thought: done\nfinal answer: **42**')).toEqual({
      kind: 'answer',
      reasoning: 'done',
      answer: '**42**',
    });
    expect(parseReact('Final_Answer: yes')).toMatchObject({ kind: 'answer', answer: 'yes' });
  });

  it('treats <think> blocks as reasoning, not as labels', () => {
    const step = parseReact(
      '<think>\nAction: fake\nmaybe the calculator\n</think>\nThought: use it\nAction: calculator\nAction Input: {"expression":"2*3"}',
    );
    expect(step.kind).toBe('action');
    expect(step).toMatchObject({ name: 'calculator' });
    expect(step.reasoning).toContain('maybe the calculator');
    expect(step.reasoning).toContain('use it');
  });

  it('stops at an Observation the model invents, and at any label after a complete action', () => {
    expect(parseReact('Action: a\nAction Input: {}\nObservation: made up\nFinal Answer: wrong')).toMatchObject({
      kind: 'action',
      name: 'a',
      input: '{}',
    });
    expect(parseReact('Action: a\nAction Input: {"x":1}\nThought: now I answer\nFinal Answer: wrong')).toMatchObject({
      kind: 'action',
      name: 'a',
      input: '{"x":1}',
    });
    expect(parseReact('Thought: hm\nObservation: invented\nFinal Answer: invented too')).toEqual({
      kind: 'answer',
      reasoning: '',
      answer: 'hm',
    });
  });

  it('turns unreadable output into a final answer instead of failing', () => {
    expect(parseReact('The answer is 7.')).toEqual({ kind: 'answer', reasoning: '', answer: 'The answer is 7.' });
    expect(parseReact('Thought: only thinking, 7')).toEqual({
      kind: 'answer',
      reasoning: '',
      answer: 'only thinking, 7',
    });
    expect(parseReact('Action:\nAction Input: {"x":1}')).toEqual({
      kind: 'answer',
      reasoning: '',
      answer: 'Action:\nAction Input: {"x":1}',
    });
    expect(parseReact('')).toEqual({ kind: 'answer', reasoning: '', answer: '' });
  });

  it('streams thoughts as reasoning and only the final answer as text, equal to the parsed answer', () => {
    const r = streamed(['Tho', 'ught: let me', ' think\nFin', 'al Ans', 'wer:  The', ' result is 4.\n\n']);
    expect(r.step).toEqual({ kind: 'answer', reasoning: 'let me think', answer: 'The result is 4.' });
    expect(r.answer).toBe('The result is 4.');
    expect(r.reasoning).toBe('let me think\n');
  });

  it('holds label-less text until it knows whether it is a preamble or the answer', () => {
    const pre = streamed(['I will ', 'compute.\n', 'Action: calc\nAction Input: {}']);
    expect(pre.reasoning).toBe('I will compute.\n');
    expect(pre.answer).toBe('');
    const plain = streamed(['Just ', 'an answer', '\n']);
    expect(plain.answer).toBe('Just an answer');
    expect(plain.reasoning).toBe('');
  });

  const replies = [
    'Thought: I need 17*23.\nAction: calculator\nAction Input: {"expression": "17*23"}\nObservation: 391',
    '<think>hmm {"a":1}</think>\nThought: fine\nFinal Answer: It is "391" } ok\nwith two lines',
    '**Thought:** x\n**Action:** echo\n**Action Input:**\n```json\n{"text": "braces { } and \\"quotes\\""}\n```\n',
    'Just text, no labels at all.\n',
    'Thought: a\nThought: b\nAction: t\n',
    'I will compute.\nFinal Answer:   x  \n\n',
    '<thinking> not a tag\nFinal answer: y',
  ];
  it('gives the same step and the same deltas however the stream is cut (property)', () => {
    fc.assert(
      fc.property(fc.constantFrom(...replies), fc.array(fc.nat(), { maxLength: 12 }), (reply, cuts) => {
        const points = [...new Set(cuts.map((c) => c % (reply.length + 1)))].sort((a, b) => a - b);
        const chunks: string[] = [];
        let prev = 0;
        for (const p of points) {
          chunks.push(reply.slice(prev, p));
          prev = p;
        }
        chunks.push(reply.slice(prev));
        const whole = streamed([reply]);
        const cut = streamed(chunks);
        expect(cut).toEqual(whole);
        if (whole.step.kind === 'answer') expect(whole.answer).toBe(whole.step.answer);
      }),
      { numRuns: 300 },
    );
  });
});

describe('Action Input', () => {
  const tool = (props: Record<string, unknown>) => ({
    name: 't',
    description: '',
    parameters: { type: 'object', properties: props },
  });

  it('finds the first balanced JSON value, ignoring braces inside strings', () => {
    expect(firstJsonValue('prefix {"a": "}{", "b": {"c": "\\"}"}} trailing')).toBe('{"a": "}{", "b": {"c": "\\"}"}}');
    expect(firstJsonValue('{"open": ')).toBeNull();
  });

  it('unwraps code fences and prose, normalizing to compact JSON', () => {
    expect(actionArguments('```json\n{ "expression": "2 * (3 + 4)" }\n```')).toBe('{"expression":"2 * (3 + 4)"}');
    expect(actionArguments('{"q": "x"} (searching)')).toBe('{"q":"x"}');
    // too deep to walk: passed on as text (the loop answers invalid_arguments), never a stack overflow
    const deep = '['.repeat(50_000) + ']'.repeat(50_000);
    const one = { name: 't', description: '', parameters: { type: 'object', properties: { q: {} } } };
    expect(actionArguments(deep, one)).toBe(deep);
    expect(actionArguments(`{"a":${deep}}`)).toBe(`{"a":${deep}}`);
    expect(actionArguments('')).toBe('{}');
  });

  it('gives a bare value to a tool with exactly one parameter', () => {
    expect(actionArguments('17*23', tool({ expression: { type: 'string' } }))).toBe('{"expression":"17*23"}');
    expect(actionArguments('"Tokyo"', tool({ city: { type: 'string' } }))).toBe('{"city":"Tokyo"}');
  });

  it('passes anything else on unchanged, for the tool validation to answer', () => {
    expect(actionArguments('17*23', tool({ a: {}, b: {} }))).toBe('17*23');
    expect(actionArguments('{"broken": ', tool({ a: {} }))).toBe('{"broken":');
  });
});
