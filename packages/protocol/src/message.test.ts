import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TranscriptCheck, transcriptProblems, type Message } from './message.js';

const call = (id: string) => ({ id, name: 't', arguments: '{}' });
const user: Message = { role: 'user', content: 'q' };
const asst = (...ids: string[]): Message => ({ role: 'assistant', content: null, toolCalls: ids.map(call) });
const tool = (id: string | undefined): Message => ({ role: 'tool', content: 'r', ...(id ? { toolCallId: id } : {}) });
const answer: Message = { role: 'assistant', content: 'a' };

describe('TranscriptCheck', () => {
  it.each<[string, Message[], RegExp[]]>([
    ['valid', [user, asst('a', 'b'), tool('a'), tool('b'), answer], []],
    ['unanswered before the next turn', [user, asst('a'), user], [/call\(s\) a not answered before message #2/]],
    ['out of order', [user, asst('a', 'b'), tool('b'), tool('a'), answer], [/not in call order/]],
    ['answered twice', [user, asst('a'), tool('a'), tool('a'), answer], [/answers 'a' a second time/]],
    ['a stray result', [user, tool('x')], [/no call is open/]],
    ['a repeated id', [user, asst('a'), tool('a'), asst('a'), tool('a'), answer], [/'a' is not unique/]],
    ['a result without an id', [user, asst('a'), tool(undefined), tool('a')], [/has no toolCallId/]],
    ['open at the end', [user, asst('a')], [/not answered before the end of the transcript/]],
  ])('%s', (_name, messages, expected) => {
    const problems = transcriptProblems(messages);
    expect(problems).toHaveLength(expected.length);
    expected.forEach((re, i) => expect(problems[i]).toMatch(re));
  });

  it('finds the same problems fed a piece at a time as over the whole transcript', () => {
    const message = fc.oneof(
      fc.constant(user),
      fc.constant(answer),
      fc.uniqueArray(fc.constantFrom('a', 'b', 'c', 'd'), { minLength: 1, maxLength: 3 }).map((ids) => asst(...ids)),
      fc.option(fc.constantFrom('a', 'b', 'c', 'd', 'x'), { nil: undefined }).map(tool),
    );
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 14 }),
        fc.array(fc.nat(14), { maxLength: 4 }),
        fc.boolean(),
        (msgs, cuts, allowOpenTail) => {
          const check = new TranscriptCheck();
          let at = 0;
          for (const cut of [...cuts].sort((x, y) => x - y)) {
            check.push(msgs.slice(at, Math.max(at, cut)));
            at = Math.max(at, cut);
            check.problems(); // asking in between changes nothing
          }
          check.push(msgs.slice(at));
          expect(check.length).toBe(msgs.length);
          expect(check.problems({ allowOpenTail })).toEqual(transcriptProblems(msgs, { allowOpenTail }));
        },
      ),
      { numRuns: 500 },
    );
  });
});
