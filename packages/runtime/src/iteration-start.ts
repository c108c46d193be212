import { wellFormedJson, type Message, type NewEvent } from '@agentloop/protocol';
import type { RunScripts } from './run-scripts.js';
import { parseRunState, type RunState } from './run-state.js';
import { resultChunks, resultEntries, toAnswer, type RecordAnswer } from './result-chunks.js';
import type { LocalResult } from './run-store-types.js';

export interface StartParams {
  iteration: number;
  expectPhase: string;
  expectPendingFinal: string;
  callMode: string;
  extraMessage?: Message;
  events: NewEvent[];
  returnState?: boolean;
  owner?: string;
  expectBatch?: readonly string[];
  /**
   * The outcomes of the batch's local calls, recorded in the same step before the start (an iteration that goes on in
   * the job that ran them: one script instead of two). Their answers stand whatever the start decides.
   */
  results?: LocalResult[];
  /**
   * The delivery that checkpointed iteration k-1, for a start sent right behind that checkpoint (RunStore.checkpointThenStart):
   * the start, and the recording of `results`, happen only over that delivery's own checkpoint.
   */
  expectOwner?: string;
  /**
   * Return the whole transcript in place of the appended messages when it has at most this many (a caller that holds
   * none of it, and would read it next: `Started.appended` is then all of it, `length` long).
   */
  transcriptUpTo?: number;
}

export type Started = {
  length: number | null;
  toolCalls: number;
  resumed: boolean;
  edited: boolean;
  appended: Message[];
  state: RunState | null;
};

/** Whether `results` can ride with a start: one step's worth of results (else they are recorded in steps of their own). */
export const recordableWithStart = (results: LocalResult[]): boolean => resultChunks(results).length === 1;

/**
 * startIteration-18.lua: starts iteration k (compare-and-set). Returns the transcript length and the messages it appended
 * (the previous batch's results and any instruction), so a caller that caches the transcript need not read it again;
 * 'stale' when the run was not where the caller expected, 'waiting' when a call of the batch is still open. `recorded`:
 * the answers for `p.results`, in order (empty without them).
 */
export async function startIteration(
  scripts: RunScripts,
  runId: string,
  p: StartParams,
): Promise<{ started: Started | 'stale' | 'waiting'; recorded: RecordAnswer[] }> {
  if (p.results?.length && p.returnState)
    throw new Error('startIteration: results are not recorded with a start that returns the state');
  const r = await scripts.statusRun('startIteration', runId, (ev) => [
    p.iteration,
    p.expectPhase,
    p.callMode,
    p.extraMessage ? wellFormedJson(p.extraMessage) : '',
    ev(p.events),
    p.expectPendingFinal,
    p.returnState ? '1' : '',
    p.owner ?? '',
    // the batch as the caller knows it, serialized as the checkpoint stored it: its outcomes come with the state read
    p.expectBatch?.length ? wellFormedJson(p.expectBatch) : '',
    p.results?.length ? JSON.stringify(resultEntries(p.results, ev)) : '',
    p.expectOwner ?? '',
    p.transcriptUpTo ?? '',
  ]);
  const n = p.results?.length ?? 0;
  const recorded = r.values.slice(r.values.length - n).map((v) => toAnswer(String(v)));
  if (r.outcome !== 'started') return { started: r.outcome, recorded };
  const [length, toolCalls, resumed, count, ...rest] = r.values.slice(0, r.values.length - n) as [
    number,
    number,
    number,
    number,
    ...string[],
  ];
  const appended = rest.slice(0, Number(count)).map((m) => JSON.parse(m) as Message);
  let state: RunState | null = null;
  if (p.returnState) {
    const h: Record<string, string> = {};
    for (let i = Number(count); i + 1 < rest.length; i += 2) h[rest[i]!] = rest[i + 1]!;
    state = parseRunState(h);
  }
  return {
    started: {
      length: Number(length) < 0 ? null : Number(length),
      toolCalls: Number(toolCalls),
      resumed: resumed > 0,
      edited: resumed === 2,
      appended,
      state,
    },
    recorded,
  };
}
