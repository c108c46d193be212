import type { ReplySpec } from './types.js';

/**
 * Stop sequences as the real APIs apply them: the text ends before the first one (which is not returned). A spec
 * with `ignoreStop` plays a model whose server does not honour them.
 */
export function applyStop(spec: ReplySpec, stop: unknown): ReplySpec {
  const seqs = (typeof stop === 'string' ? [stop] : Array.isArray(stop) ? stop : []).filter(
    (x): x is string => typeof x === 'string' && x !== '',
  );
  if (!seqs.length || !spec.text || spec.ignoreStop) return spec;
  const cut = Math.min(...seqs.map((q) => spec.text!.indexOf(q)).filter((i) => i >= 0));
  return Number.isFinite(cut) ? { ...spec, text: spec.text.slice(0, cut) } : spec;
}
