import type { LocalResult } from './run-store-types.js';

/**
 * Bytes of results one recordToolResults step carries, about: a model-controlled batch of large results is recorded
 * in several steps rather than one argument of hundreds of MB (a RangeError building it, or one script decoding it
 * while Redis serves nothing else). An ordinary batch stays one step.
 */
export const RESULT_CHUNK_BYTES = 4_000_000;

/** What an entry weighs in its step: its outcome, and its events (which repeat the result and the arguments). */
const entryBytes = (r: LocalResult): number => 2 * (JSON.stringify(r.outcome).length + JSON.stringify(r.eventData.arguments ?? null).length) + 512;

/** The batch in order, cut into runs of entries of at most `maxBytes` together (an entry larger than that alone). */
export function resultChunks(batch: LocalResult[], maxBytes = RESULT_CHUNK_BYTES): LocalResult[][] {
  const chunks: LocalResult[][] = [];
  let current: LocalResult[] = [];
  let bytes = 0;
  for (const r of batch) {
    const size = entryBytes(r);
    if (current.length && bytes + size > maxBytes) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(r);
    bytes += size;
  }
  if (current.length) chunks.push(current);
  return chunks;
}
