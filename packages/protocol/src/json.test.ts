import { describe, expect, it } from 'vitest';
import { wellFormedJson } from './json.js';

describe('wellFormedJson', () => {
  it('replaces lone surrogates (high, low, at the end) with U+FFFD', () => {
    const text = wellFormedJson({ a: 'x\ud83d', b: '\ude00y', c: ['\udbff'] });
    expect(text).toBe('{"a":"x\\ufffd","b":"\\ufffdy","c":["\\ufffd"]}');
    expect(JSON.parse(text)).toEqual({ a: 'x\ufffd', b: '\ufffdy', c: ['\ufffd'] });
  });

  it('keeps surrogate pairs, control-character escapes and text that only looks like an escape', () => {
    const value = {
      emoji: '😀',
      nul: 'noop\u0000{}',
      tab: '\t',
      typed: '\\ud800 is text',
      typedAfterBackslash: '\\\\ud83d',
    };
    const text = wellFormedJson(value);
    expect(JSON.parse(text)).toEqual(value);
    expect(text).toBe(JSON.stringify(value));
  });

  it('replaces a lone surrogate that follows an escaped backslash', () => {
    expect(JSON.parse(wellFormedJson('\\\ud800'))).toBe('\\\ufffd');
  });

  it('answers null for what JSON.stringify leaves undefined', () => {
    expect(wellFormedJson(undefined)).toBe('null');
  });
});
