import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { transcriptProblems, type Message } from '@agentloop/protocol';
import { chooseCut, lastUserIndex, prunedView, summaryPrefix, turnBoundaries } from './compression-plan.js';
import { counterFor, messageTokens } from './token-counter.js';

/** Random valid transcripts: turns of user messages and assistant steps with parallel calls, reasoning and provider data. */
const transcriptArb = fc
  .array(
    fc.record({
      user: fc.boolean(),
      calls: fc.nat({ max: 4 }),
      text: fc.string({ maxLength: 40 }),
      reasoning: fc.option(fc.string({ maxLength: 30 }), { nil: undefined }),
      signature: fc.option(fc.string({ minLength: 1, maxLength: 10 }), { nil: undefined }),
      resultSize: fc.nat({ max: 300 }),
    }),
    { minLength: 1, maxLength: 25 },
  )
  .map((turns) => {
    const msgs: Message[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'first question' },
    ];
    let id = 0;
    for (const t of turns) {
      if (t.user) msgs.push({ role: 'user', content: `user: ${t.text}` });
      const calls = Array.from({ length: t.calls }, () => ({
        id: `c${id++}`,
        name: 'tool',
        arguments: JSON.stringify({ q: t.text }),
        ...(t.signature ? { providerData: { thoughtSignature: t.signature } } : {}),
      }));
      msgs.push({
        role: 'assistant',
        content: t.text,
        ...(calls.length ? { toolCalls: calls } : {}),
        ...(t.reasoning !== undefined ? { reasoning: t.reasoning } : {}),
      });
      for (const c of calls) msgs.push({ role: 'tool', toolCallId: c.id, content: 'r'.repeat(t.resultSize) });
    }
    return msgs;
  });

const counter = counterFor({ provider: 'openai', name: 'gpt-4o-mini', params: {} });

describe('compression plan (property-based)', () => {
  it('every summarized or pruned transcript keeps the pairing invariant, the system prompt and the last user message', () => {
    fc.assert(
      fc.property(
        transcriptArb,
        fc.nat({ max: 3000 }),
        fc.string({ minLength: 1, maxLength: 50 }),
        (view, budget, summary) => {
          expect(transcriptProblems(view)).toEqual([]);
          const tokens = view.map((m) => messageTokens(counter, m));
          const cut = chooseCut(view, tokens, budget, 2);
          const kept = view.slice(cut);
          const summarized = [...summaryPrefix(view, cut, summary), ...kept];
          const pruned = prunedView(view);
          for (const out of [summarized, pruned]) {
            expect(transcriptProblems(out)).toEqual([]);
            expect(out[0]).toEqual({ role: 'system', content: 'sys' });
            const lu = view[lastUserIndex(view)]!;
            expect(out).toContainEqual(lu);
          }
          // kept turns are untouched (reasoning, provider data and all)
          expect(summarized.slice(summarized.length - kept.length)).toEqual(kept);
          // the kept part fits the budget whenever anything is kept
          if (kept.length) expect(tokens.slice(cut).reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(budget);
        },
      ),
      { numRuns: 120 },
    );
  });

  it('cuts only where no call is open', () => {
    fc.assert(
      fc.property(transcriptArb, (view) => {
        for (const b of turnBoundaries(view))
          expect(transcriptProblems(view.slice(b).filter((m) => m.role !== 'system'))).toEqual([]);
      }),
    );
  });
});

describe('token counter', () => {
  it('counts OpenAI families exactly with the shipped BPE ranks and estimates others', () => {
    expect(counter.exact).toBe(true);
    expect(counter.count('hello world')).toBe(2);
    const est = counterFor({ provider: 'deepseek', name: 'deepseek-chat', params: {} });
    expect(est.exact).toBe(false);
    expect(est.count('x'.repeat(400))).toBe(100);
  });
});
