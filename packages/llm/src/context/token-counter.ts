import { createRequire } from 'node:module';
import type { Message, ModelSpec } from '@agentloop/protocol';
import type { Tiktoken } from 'js-tiktoken/lite';
import type { ToolSpec } from '../types.js';
import { modelProfile } from '../model-profiles.js';

/** Counts tokens of text the way a model family does: exact BPE for OpenAI families, a calibrated estimate otherwise. */
export interface TokenCounter {
  readonly exact: boolean;
  count(text: string): number;
}

const require = createRequire(import.meta.url);
const encoders = new Map<string, Tiktoken>();

/** The BPE encoder of a rank file shipped in js-tiktoken (loaded once, lazily: no download at run time). */
function encoder(name: 'o200k_base' | 'cl100k_base'): Tiktoken {
  let e = encoders.get(name);
  if (!e) {
    const { Tiktoken } = require('js-tiktoken/lite') as typeof import('js-tiktoken/lite');
    e = new Tiktoken(require(`js-tiktoken/ranks/${name}`));
    encoders.set(name, e);
  }
  return e;
}

/** Which BPE an OpenAI model uses; null for models whose tokenizer is not public (estimate instead). */
export function encodingOf(model: ModelSpec): 'o200k_base' | 'cl100k_base' | null {
  return modelProfile(model.provider, model.name).profile.encoding ?? null;
}

/** Characters per token of the estimate (before calibration by the provider's reported usage). */
export const ESTIMATE_CHARS_PER_TOKEN = 4;

/**
 * BPE merging is quadratic in the length of one pre-tokenized piece, and a tool result can hold a piece of many
 * kilobytes (base64, minified JSON, "xxxx…", or 50,000 spaces a tenant sent). Runs of 64+ non-space or space
 * characters are counted in 48-character slices: exact for ordinary text, within a token per slice for such runs,
 * and linear in the text's length.
 */
function bpeCount(e: Tiktoken, text: string): number {
  if (!text) return 0;
  if (text.length > SAMPLED_ABOVE) return sampledCount(e, text);
  if (text.length < 64 || !/\S{64}|\s{64}/.test(text)) return e.encode(text, 'all').length;
  let n = 0;
  for (const piece of text.split(/(\S{48}|\s{48})/)) if (piece) n += e.encode(piece, 'all').length;
  return n;
}

/** Texts longer than this are counted from samples: exact counting of a megabyte would hold the event loop for seconds. */
const SAMPLED_ABOVE = 65_536;
const SAMPLE = 8_192;

/**
 * Tokens of a very long text from three exactly counted samples (start, middle, end), scaled to its length: bounded
 * work whatever the size; the provider's reported prompt tokens calibrate the run's counts anyway.
 */
function sampledCount(e: Tiktoken, text: string): number {
  const at = [0, Math.floor(text.length / 2) - SAMPLE / 2, text.length - SAMPLE];
  const tokens = at.reduce((n, i) => n + bpeCount(e, text.slice(i, i + SAMPLE)), 0);
  return Math.ceil((tokens / (3 * SAMPLE)) * text.length);
}

export function counterFor(model: ModelSpec): TokenCounter {
  const enc = encodingOf(model);
  if (!enc) return ESTIMATE;
  let c = counters.get(enc);
  if (!c) {
    // the BPE table (~66 MB of JS heap for o200k) loads on the first count, not with the counter: a process whose
    // texts all fit under their byte bounds never loads it, and never pays the full collections of a heap that size
    let e: Tiktoken | null = null;
    c = { exact: true, count: (text) => bpeCount((e ??= encoder(enc)), text) };
    counters.set(enc, c);
  }
  return c;
}

/** One counter per encoding, shared (a counter holds no state of a run's: each run's transcript entry used to make its own). */
const counters = new Map<string, TokenCounter>();
const ESTIMATE: TokenCounter = { exact: false, count: (text) => Math.ceil(text.length / ESTIMATE_CHARS_PER_TOKEN) };

/** Fixed cost of a message's framing. */
export const MESSAGE_OVERHEAD = 4;

/** Tokens of one message as the model sees it: framing, content, reasoning sent back, each call's name and arguments. */
export function messageTokens(counter: TokenCounter, m: Message): number {
  let n = MESSAGE_OVERHEAD + counter.count(m.content ?? '');
  if (m.reasoning) n += counter.count(m.reasoning);
  for (const c of m.toolCalls ?? []) n += 8 + counter.count(c.name) + counter.count(c.arguments);
  return n;
}

const utf8 = (s: string | null | undefined) => (s ? Buffer.byteLength(s, 'utf8') : 0);

/**
 * An upper bound of messageTokens without tokenizing: a BPE token covers at least one byte, so bytes bound the
 * exact count; the estimate is cheap already and is its own bound.
 */
export function messageTokenBound(counter: TokenCounter, m: Message): number {
  if (!counter.exact) return messageTokens(counter, m);
  let n = MESSAGE_OVERHEAD + utf8(m.content) + utf8(m.reasoning);
  for (const c of m.toolCalls ?? []) n += 8 + utf8(c.name) + utf8(c.arguments);
  return n;
}

/** A tool's parameters as JSON and its UTF-8 bytes, once per schema object: every iteration offers the same ones. */
const schemaTexts = new WeakMap<object, { text: string; bytes: number }>();
function schemaText(parameters: Record<string, unknown>): { text: string; bytes: number } {
  let t = schemaTexts.get(parameters);
  if (!t) {
    const text = JSON.stringify(parameters);
    schemaTexts.set(parameters, (t = { text, bytes: utf8(text) }));
  }
  return t;
}

/** Tokens of the tool definitions sent with a request. */
export function toolsTokens(counter: TokenCounter, tools: readonly ToolSpec[] | null): number {
  if (!tools?.length) return 0;
  return tools.reduce(
    (n, t) =>
      n + 10 + counter.count(t.name) + counter.count(t.description) + counter.count(schemaText(t.parameters).text),
    0,
  );
}

/** An upper bound of toolsTokens, without tokenizing (bytes; the estimate as it is). */
export function toolsTokenBound(counter: TokenCounter, tools: readonly ToolSpec[] | null): number {
  if (!tools?.length) return 0;
  if (!counter.exact) return toolsTokens(counter, tools);
  return tools.reduce((n, t) => n + 10 + utf8(t.name) + utf8(t.description) + schemaText(t.parameters).bytes, 0);
}
