import { describe, expect, it } from 'vitest';
import { counterFor } from './token-counter.js';
import { capText } from './cap-text.js';

const counter = counterFor({ provider: 'openai', name: 'gpt-4o', params: {} });

describe('capText', () => {
  it('leaves a result that fits alone', () => {
    expect(capText('short result', 100, counter.count)).toBe('short result');
  });

  it('caps by real tokens: CJK text has far fewer characters per token than prose', () => {
    const cjk = '東京の天気は晴れです。'.repeat(400);
    const capped = capText(cjk, 300, counter.count);
    expect(counter.count(capped)).toBeLessThanOrEqual(300);
    expect(counter.count(capped)).toBeGreaterThan(250); // not needlessly short
    expect(capped.startsWith('東京の天気は晴れです。')).toBe(true);
    expect(capped).toMatch(/\[… \d+ characters \(about \d+ tokens\) cut from this tool result …\]/);
    // the 4-characters-a-token guess would have let about twice the tokens through
    expect(counter.count(capText(cjk, 300))).toBeGreaterThan(300);
  });

  it('keeps head and tail of prose within the cap', () => {
    const prose = Array.from({ length: 3000 }, (_, i) => `word${i}`).join(' ');
    const capped = capText(prose, 500, counter.count);
    expect(counter.count(capped)).toBeLessThanOrEqual(500);
    expect(capped.startsWith('word0 word1')).toBe(true);
    expect(capped.endsWith('word2999')).toBe(true);
  });
});

describe('exact token counting of hostile text', () => {
  it('stays linear on long runs of spaces (a tenant input of 50,000 spaces)', () => {
    const t0 = performance.now();
    const n = counter.count(`a${' '.repeat(50_000)}b${'\n'.repeat(20_000)}`);
    expect(performance.now() - t0).toBeLessThan(3000);
    expect(n).toBeGreaterThan(0);
  });
});
