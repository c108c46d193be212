import { describe, expect, it } from 'vitest';
import { newCallId, newRunId, randomToken } from './ids.js';

describe('ids', () => {
  it('draws every id from the alphabet and never repeats one, across refills of the byte pool', () => {
    const ids = Array.from({ length: 5_000 }, () => newRunId()); // 20 bytes each: ~25 refills of the 4 KiB pool
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids) expect(id).toMatch(/^run_[A-Za-z0-9]{20}$/);
    expect(newCallId()).toMatch(/^call_[A-Za-z0-9]{24}$/);
  });
  it('spreads characters over the whole alphabet', () => {
    const counts = new Map<string, number>();
    for (const ch of randomToken(4096) + randomToken(4096)) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    expect(counts.size).toBe(62);
  });
  it('refuses a length that is not a whole number of characters the pool can give', () => {
    for (const bad of [5000, -1, 1.5, Number.NaN]) expect(() => randomToken(bad)).toThrow(RangeError);
    expect(newRunId()).toMatch(/^run_[A-Za-z0-9]{20}$/); // the pool is intact after the refusals
  });
});
