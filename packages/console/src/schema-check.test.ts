import { describe, expect, it } from 'vitest';
import { parseArguments, schemaProblems } from './schema-check.js';
import { applyEvent, emptyRunEvents } from './run-state.js';

const email = {
  type: 'object',
  properties: {
    to: { type: 'string', pattern: '^[^@]+@[^@]+$' },
    body: { type: 'string', maxLength: 5 },
    n: { type: 'integer', minimum: 1 },
    tags: { type: 'array', items: { enum: ['a', 'b'] } },
  },
  required: ['to'],
  additionalProperties: false,
};

describe('the console checks edited arguments against the tool schema', () => {
  it('accepts what the schema allows and names each problem by its path', () => {
    expect(schemaProblems(email, { to: 'a@b.c', body: 'hi', n: 2, tags: ['a'] })).toEqual([]);
    expect(schemaProblems(email, { to: 'nope', body: 'too long', n: 1.5, tags: ['c'], cc: 'x' })).toEqual([
      'to: must match ^[^@]+@[^@]+$',
      'body: at most 5 characters',
      'n: must be integer, not number',
      'tags[0]: must be one of "a", "b"',
      'cc: is not allowed (no such parameter)',
    ]);
    expect(schemaProblems(email, {})).toEqual(['to: is required']);
    expect(schemaProblems({ type: 'object', properties: { n: { type: 'number', minimum: 0 } } }, { n: 3 })).toEqual([]);
  });

  it('lets through what it cannot judge (the server validates again)', () => {
    expect(schemaProblems(undefined, { anything: 1 })).toEqual([]);
    expect(schemaProblems({ type: 'object', properties: { x: { type: 'string', pattern: '(' } } }, { x: 'y' })).toEqual(
      [],
    );
    expect(schemaProblems({ oneOf: [{ type: 'string' }] }, 3)).toEqual([]);
  });

  it('parses the edited text to an object or says why not', () => {
    expect(parseArguments('{"a": 1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseArguments('[1]')).toEqual({ ok: false, error: 'the arguments must be a JSON object' });
    expect(parseArguments('{a')).toMatchObject({ ok: false, error: expect.stringMatching(/^not valid JSON/) });
  });
});

describe('the run view folds events', () => {
  const ev = (seq: number, type: string, data: Record<string, unknown>) => ({
    seq,
    runId: 'r',
    type,
    at: '2026-01-01T00:00:00Z',
    data,
  });
  it('streams text and reasoning per iteration, merges a call’s statuses, ignores a replayed event', () => {
    let s = emptyRunEvents();
    for (const e of [
      ev(1, 'iteration.started', { iteration: 1 }),
      ev(2, 'reasoning.delta', { iteration: 1, text: 'hm' }),
      ev(3, 'message.delta', { iteration: 1, text: 'Hel' }),
      ev(4, 'message.delta', { iteration: 1, text: 'lo' }),
      ev(4, 'message.delta', { iteration: 1, text: 'lo' }),
      ev(5, 'tool.call', { callId: 'c1', name: 'send_email', arguments: { to: 'a@b' }, status: 'awaiting_approval' }),
      ev(6, 'tool.call', {
        callId: 'c1',
        name: 'send_email',
        arguments: { to: 'x@y' },
        originalArguments: { to: 'a@b' },
        status: 'completed',
        result: { sent: true },
        durationMs: 3,
      }),
    ])
      s = applyEvent(s, e);
    expect(s.turns).toEqual([{ iteration: 1, reasoning: 'hm', text: 'Hello' }]);
    expect(s.calls).toEqual([
      {
        callId: 'c1',
        name: 'send_email',
        iteration: 1,
        status: 'completed',
        arguments: { to: 'x@y' },
        originalArguments: { to: 'a@b' },
        result: { sent: true },
        durationMs: 3,
      },
    ]);
    expect(s.events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
