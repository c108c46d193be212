import { counterFor, messageTokenBound, messageTokens, type TokenCounter } from '@agentloop/llm';
import { TranscriptCheck, type Message, type ModelSpec } from '@agentloop/protocol';
import type { RunState, RunStore } from '@agentloop/runtime';

interface Entry {
  history: Message[];
  /** cum[i] = tokens of history[0..i-1], so any suffix costs one subtraction — for the messages counted so far. */
  cum: number[];
  /** bound[i] = an upper bound of the same (cheap: bytes), for every message. */
  bound: number[];
  counter: TokenCounter;
  /** Provider-reported prompt tokens ÷ our count of the same request, smoothed (corrects the estimate). */
  calibration: number;
  /** The pairing check of the view `checked` names (`<tv>:<viewFrom>:<prefix length>`), fed as the history grows. */
  check: TranscriptCheck;
  checked: string;
  /** Every call id of the history, once asked for (callIdsFree): kept up as the history grows. */
  callIds: Set<string> | null;
}

export interface ContextView {
  messages: Message[];
  /** Tokens of the messages, by the model family's counter (exact BPE or the estimate); counted on first read. */
  readonly tokens: number;
  /** A cheap upper bound of `tokens` (BPE never yields more tokens than bytes): when even this fits, nothing is counted before the call. */
  upperBound: number;
  counter: TokenCounter;
  /** Length of the full history (what the next append extends). */
  historyLength: number;
  /** What breaks SPEC §2's pairing invariant in `messages` (transcriptProblems), checked once per message. */
  problems: string[];
  /** Multiply counts by this to predict what the provider will count. */
  calibration: number;
}

/** Counts exactly the messages of `history` not counted in `cum` yet. */
const count = (history: readonly Message[], cum: number[], counter: TokenCounter) => {
  for (let i = cum.length - 1; i < history.length; i++) cum.push(cum[i]! + messageTokens(counter, history[i]!));
};

/**
 * A view as a class: its lazy `tokens` is the prototype's getter, so each view is a plain fast object (an object
 * literal with a getter is a dictionary, plus the getter's closure and context: ~0.45 KB more per run in flight,
 * docs/BENCHMARKS.md "Capacity").
 */
class View implements ContextView {
  private counted: number | null = null;

  constructor(
    readonly messages: Message[],
    readonly upperBound: number,
    readonly counter: TokenCounter,
    readonly historyLength: number,
    readonly problems: string[],
    readonly calibration: number,
    /** What `tokens` counts: the entry's arrays the view was made from (a reset replaces them), its prefix and cut. */
    private readonly history: readonly Message[],
    private readonly cum: number[],
    private readonly prefix: readonly Message[],
    private readonly from: number,
  ) {}

  get tokens(): number {
    if (this.counted === null) {
      count(this.history, this.cum, this.counter);
      this.counted =
        this.prefix.reduce((n, m) => n + messageTokens(this.counter, m), 0) +
        this.cum[this.historyLength]! -
        this.cum[this.from]!;
    }
    return this.counted;
  }
}

/**
 * The transcripts of recently advanced runs, kept in memory with a running token count per message. The history
 * is append-only, so the cache is extended with what this process appended (the start script returns the messages
 * it added, the checkpoint adds the assistant message) and read from Redis only from the first index it lacks; the
 * view the model sees (compression prefix + history from an index) and its token count cost O(new messages) per
 * iteration, whatever the length of the conversation. Exact counts are taken lazily: while a byte bound shows the
 * context is far from full, the model request goes out first and the new messages are counted afterwards (for the
 * calibration), off the path to the provider.
 */
export class TranscriptCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly store: RunStore,
    private readonly maxRuns = 2000,
  ) {}

  private entry(runId: string, model: ModelSpec): Entry {
    let e = this.entries.get(runId);
    if (e)
      this.entries.delete(runId); // re-inserted below: Map order = recency
    else
      e = {
        history: [],
        cum: [0],
        bound: [0],
        counter: counterFor(model),
        calibration: 1,
        check: new TranscriptCheck(),
        checked: '',
        callIds: null,
      };
    this.entries.set(runId, e);
    if (this.entries.size > this.maxRuns) this.entries.delete(this.entries.keys().next().value!);
    return e;
  }

  private push(e: Entry, msgs: readonly Message[]): void {
    for (const m of msgs) {
      e.history.push(m);
      if (e.callIds) for (const c of m.toolCalls ?? []) e.callIds.add(c.id);
      e.bound.push(e.bound[e.bound.length - 1]! + messageTokenBound(e.counter, m));
    }
  }

  /** The view the model sees next; `knownLength` (from a script that just wrote the list) lets a consistent cache skip Redis. */
  async view(
    st: Pick<RunState, 'id' | 'model' | 'viewPrefix' | 'viewFrom' | 'tv'>,
    knownLength?: number,
  ): Promise<ContextView> {
    const e = this.entry(st.id, st.model);
    if (knownLength === undefined || e.history.length !== knownLength) {
      if (knownLength !== undefined && e.history.length > knownLength) {
        e.history = [];
        e.cum = [0];
        e.bound = [0];
        e.checked = '';
        e.callIds = null;
      }
      this.push(e, await this.store.messages(st.id, e.history.length));
    }
    const from = Math.min(st.viewFrom, e.history.length);
    const len = e.history.length;
    const prefix = st.viewPrefix;
    // the view is prefix + history[from..]; a compression (tv) or a new cut starts its check again
    const viewKey = `${st.tv}:${from}:${prefix.length}`;
    if (e.checked !== viewKey) {
      e.check = new TranscriptCheck().push(prefix);
      e.checked = viewKey;
    }
    e.check.push(e.history.slice(from + e.check.length - prefix.length));
    const messages = prefix.length || from ? [...prefix, ...e.history.slice(from)] : e.history;
    const upperBound = prefix.reduce((n, m) => n + messageTokenBound(e.counter, m), 0) + e.bound[len]! - e.bound[from]!;
    return new View(
      messages,
      upperBound,
      e.counter,
      len,
      e.check.problems(),
      e.calibration,
      e.history,
      e.cum,
      prefix,
      from,
    );
  }

  /** Whether the run's history is cached exactly `length` long (a view of it needs no read). */
  holds(runId: string, length: number): boolean {
    return this.entries.get(runId)?.history.length === length;
  }

  /**
   * Whether the run's cached history, exactly `length` long, uses none of `ids` as a call id: a checkpoint of a batch
   * with these ids will not find them taken (every call a run records is in its transcript, from the first message).
   * False when the history is not cached so. The ids are collected once per entry, then kept up by each append.
   */
  callIdsFree(runId: string, length: number, ids: readonly string[]): boolean {
    const e = this.entries.get(runId);
    if (e?.history.length !== length) return false;
    if (!e.callIds) {
      e.callIds = new Set();
      for (const m of e.history) for (const c of m.toolCalls ?? []) e.callIds.add(c.id);
    }
    const used = e.callIds;
    return ids.every((id) => !used.has(id));
  }

  /**
   * Messages this process appended at the end of the history (now `length` long); an inconsistent entry is dropped.
   * With `model`, messages that are the whole history (a start that returned it) make the run's entry.
   */
  appended(runId: string, length: number, messages: readonly Message[], model?: ModelSpec): void {
    let e = this.entries.get(runId);
    if (!e && model && messages.length === length) e = this.entry(runId, model);
    if (!e) return;
    if (e.history.length + messages.length === length) this.push(e, messages);
    else this.entries.delete(runId);
  }

  /** The provider counted `reported` prompt tokens for a request we counted as `counted`. */
  calibrate(runId: string, counted: number, reported: number): void {
    const e = this.entries.get(runId);
    if (!e || counted <= 0 || reported <= 0) return;
    const ratio = Math.min(4, Math.max(0.5, reported / counted));
    e.calibration = e.calibration === 1 ? ratio : 0.5 * e.calibration + 0.5 * ratio;
  }

  forget(runId: string): void {
    this.entries.delete(runId);
  }
}
