import {
  contextWindowOf,
  lastUserIndex,
  messageTokens,
  prunedView,
  toolsTokenBound,
  toolsTokens,
  type TokenCounter,
  type ToolSpec,
} from '@agentloop/llm';
import { SUMMARY_DEADLINE_MS, toolErrorOutcome, type CallMode, type Message, type NewEvent } from '@agentloop/protocol';
import type { IterationDelivery, Metrics, RunState, RunStore } from '@agentloop/runtime';
import { finalizeInstruction } from './decide-advance.js';
import type { ContextView, TranscriptCache } from './transcript-cache.js';
import type { ShellCommand } from './shell-commands.js';

export interface Fitted {
  view: ContextView;
  tools: ToolSpec[] | null;
  callMode: CallMode;
}

/** The ladder's steps already taken for this iteration (kept by the delivery across the summary wait). */
type Stage = 0 | 1 | 2 | 3;

/**
 * Keeps the next model call inside the context window (DESIGN "Context pressure"): over `compressAt` × window,
 * (1) the compressor summarizes older turns — the gate answers `wait_summary`, and the shell parks the job as a parent
 * waits for a child, holding no worker slot, for at most `summaryDeadlineMs`; the job's next run finds the summary
 * (the ladder's stage kept in the delivery); (2) if that fails, does not come or does not shrink the context, prune to
 * the system prompt, a note and the last user message; (3) if the call still cannot fit, answer the last batch's calls `skipped` in the view and
 * make a final call without tools (stopReason context_limit). `force` (the provider said context_length_exceeded)
 * takes the next step whatever the estimate says.
 */
export class ContextGate {
  constructor(
    private readonly store: RunStore,
    private readonly transcripts: TranscriptCache,
    private readonly metrics: Metrics,
    /** How long the iteration waits for its summary before it prunes instead (SPEC §3: 60 s). */
    private readonly summaryDeadlineMs = SUMMARY_DEADLINE_MS,
  ) {}

  /**
   * Whether the request's cheap byte bound reaches half the compression threshold. Below that, nothing needs an exact
   * count — neither the gate nor the calibration by the provider's usage — so short runs never load a BPE table.
   */
  nearThreshold(request: RunState['request'], fitted: Fitted): boolean {
    const { view, tools } = fitted;
    return (
      Math.ceil((view.upperBound + toolsTokenBound(view.counter, tools)) * view.calibration) >=
      0.5 * request.context.compressAt * contextWindowOf(request.model)
    );
  }

  /** Whether the call fits as it is, by the cheap bound or the estimate: fit() then changes nothing. */
  fitsAsIs(request: RunState['request'], fitted: Fitted): boolean {
    const { view, tools } = fitted;
    const threshold = request.context.compressAt * contextWindowOf(request.model);
    return (
      Math.ceil((view.upperBound + toolsTokenBound(view.counter, tools)) * view.calibration) < threshold ||
      Math.ceil((view.tokens + toolsTokens(view.counter, tools)) * view.calibration) < threshold
    );
  }

  async fit(
    delivery: IterationDelivery,
    st: RunState,
    k: number,
    fitted: Fitted,
    force = false,
  ): Promise<Fitted | ShellCommand> {
    const request = st.request;
    const window = contextWindowOf(request.model);
    const threshold = request.context.compressAt * window;
    const { tools, callMode } = fitted;
    let view = fitted.view;
    let stage = delivery.compressStage as Stage;
    const estimate = () => Math.ceil((view.tokens + toolsTokens(view.counter, tools)) * view.calibration);
    // far from full by a byte bound: no tokenizing before the call (the view counts itself afterwards)
    if (!force && Math.ceil((view.upperBound + toolsTokenBound(view.counter, tools)) * view.calibration) < threshold)
      return fitted;
    if (!force && estimate() < threshold) return fitted;
    const setStage = async (s: Stage) => {
      stage = s;
      await delivery.setCompressStage(s);
    };
    const reload = async () => {
      const fresh = (await this.store.load(st.id))!;
      // usage too: a summary is billed to the run (budgets must see it)
      Object.assign(st, { viewPrefix: fresh.viewPrefix, viewFrom: fresh.viewFrom, tv: fresh.tv, usage: fresh.usage });
      view = await this.transcripts.view(st);
    };
    const mode = request.context.compression;
    if (mode === 'summarize' && stage < 1) {
      await setStage(1);
      return { kind: 'wait_summary', runId: st.id, k, tv: st.tv, deadlineMs: this.summaryDeadlineMs };
    }
    if (mode !== 'off' && stage < 2) {
      await setStage(2);
      const before = estimate();
      const pruned = prunedView(view.messages);
      const after = tokensOf(view.counter, pruned) + toolsTokens(view.counter, tools);
      const ok = await this.store.applyCompression(st.id, {
        iteration: k,
        tv: st.tv,
        prefix: pruned,
        from: view.historyLength,
        record: {
          at: new Date().toISOString(),
          strategy: 'prune',
          tokensBefore: before,
          tokensAfter: after,
          from: view.historyLength,
        },
        events: [{ type: 'context.compressed', data: { strategy: 'prune', tokensBefore: before, tokensAfter: after } }],
      });
      await reload();
      this.metrics.compressions.inc({ strategy: 'prune', outcome: ok ? 'ok' : 'conflict' });
      if (estimate() < window) return { view, tools, callMode };
    }
    await setStage(3);
    return this.lastResort(st, k, view, tools);
  }

  /** Level 3: the last batch's calls answered `skipped` in the view, tools withheld, a final answer asked for. */
  private async lastResort(st: RunState, k: number, view: ContextView, tools: ToolSpec[] | null): Promise<Fitted> {
    const msgs = view.messages;
    const systems = msgs.filter((m) => m.role === 'system');
    const lu = lastUserIndex(msgs);
    let lastCalls = -1;
    for (let i = msgs.length - 1; i >= 0; i--)
      if (msgs[i]!.role === 'assistant' && msgs[i]!.toolCalls?.length) {
        lastCalls = i;
        break;
      }
    const prefix: Message[] = [...systems];
    if (lu >= 0 && (lastCalls < 0 || lu < lastCalls)) prefix.push(msgs[lu]!);
    let skipped = 0;
    if (lastCalls >= 0) {
      const a = msgs[lastCalls]!;
      prefix.push(a);
      const answer = toolErrorOutcome('skipped', 'Skipped: this result did not fit the model context window.').content;
      for (const c of a.toolCalls!) prefix.push({ role: 'tool', toolCallId: c.id, content: answer });
      skipped = a.toolCalls!.length;
    }
    prefix.push({ role: 'user', content: finalizeInstruction('context_limit') });
    const before = view.tokens + toolsTokens(view.counter, tools);
    const events: NewEvent[] = [
      {
        type: 'context.compressed',
        data: { strategy: 'prune', tokensBefore: before, tokensAfter: tokensOf(view.counter, prefix) },
      },
    ];
    await this.store.applyCompression(st.id, {
      iteration: k,
      tv: st.tv,
      prefix,
      from: view.historyLength,
      record: { at: new Date().toISOString(), strategy: 'context_limit', tokensBefore: before, skipped },
      events,
    });
    if (skipped) this.metrics.toolsSkipped.inc({ reason: 'context_limit' }, skipped);
    this.metrics.compressions.inc({ strategy: 'context_limit', outcome: 'ok' });
    const fresh = (await this.store.load(st.id))!;
    Object.assign(st, { viewPrefix: fresh.viewPrefix, viewFrom: fresh.viewFrom, tv: fresh.tv });
    return { view: await this.transcripts.view(st), tools: null, callMode: 'context_limit' };
  }
}

const tokensOf = (counter: TokenCounter, msgs: readonly Message[]) =>
  msgs.reduce((n, m) => n + messageTokens(counter, m), 0);
