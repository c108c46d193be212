import { wellFormedJson } from '@agentloop/protocol';
import type { LocalResult } from './run-store-types.js';
import type { EventArg, RunScripts } from './run-scripts.js';

/** What recording a result answers: recorded, answered otherwise (cancelled, skipped), stale (another owner), null (answered already). */
export type RecordAnswer = 'recorded' | 'cancelled' | 'skipped' | 'stale' | null;

/**
 * Bytes of results one recordToolResults step carries, about: a model-controlled batch of large results is recorded
 * in several steps rather than one argument of hundreds of MB (a RangeError building it, or one script decoding it
 * while Redis serves nothing else). An ordinary batch stays one step.
 */
export const RESULT_CHUNK_BYTES = 4_000_000;

/** What an entry weighs in its step: its outcome, and its events (which repeat the result and the arguments). */
const entryBytes = (r: LocalResult): number =>
  2 * (JSON.stringify(r.outcome).length + JSON.stringify(r.eventData.arguments ?? null).length) + 512;

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

/**
 * Records a batch of local calls' results (recordToolResults-10.lua), each checked on its own as recordToolResult
 * checks it, in one step per `maxBytes` of results: an ordinary batch is one step. One answer per call, in order.
 */
export async function recordInChunks(
  scripts: RunScripts,
  runId: string,
  batch: LocalResult[],
  maxBytes = RESULT_CHUNK_BYTES,
): Promise<RecordAnswer[]> {
  const answers: RecordAnswer[] = [];
  for (const chunk of resultChunks(batch, maxBytes)) {
    const r = await scripts.run('recordToolResults', runId, (ev) => [JSON.stringify(resultEntries(chunk, ev))]);
    answers.push(...r.values.map((v) => toAnswer(String(v))));
  }
  return answers;
}

/** A batch's results as recordEntries (common.lua) takes them: one entry per call. */
export const resultEntries = (chunk: LocalResult[], ev: EventArg) =>
  chunk.map((b) => [
    b.callId,
    wellFormedJson(b.outcome),
    ev([{ type: 'tool.call', data: b.eventData }]),
    b.unstarted ? ev([{ type: 'tool.call', data: b.unstarted }]) : '',
    b.owner,
  ]);

/** A script's answer for one recorded call. */
export const toAnswer = (v: string): RecordAnswer => (v === 'answered' ? null : (v as Exclude<RecordAnswer, null>));
