import { argumentsForDisplay, type CallMode, type Message, type NewEvent, type StopReason, type Usage } from '@agentloop/protocol';
import type { ModelResponse, PriceTable } from '@agentloop/llm';
import { maxResultTokens, type CatalogEntry, type CheckpointInput, type RunState } from '@agentloop/runtime';
import { classificationEvents, classifyCalls, type ClassifiedCall } from './classify-calls.js';
import { normalizeCallIds } from './normalize-call-ids.js';

/** A call to publish to its pool after the checkpoint. */
export interface CallToRun {
  callId: string;
  name: string;
  arguments: string;
  pool: string;
}

/** What iteration k's model response means for the run: the checkpoint to record, then what to do after it. */
export interface ResponsePlan {
  checkpoint: CheckpointInput;
  /** Usage of this model call (iteration.completed) and the run's totals after it. */
  iterationUsage: Omit<Usage, 'toolCalls' | 'llmCalls'>;
  totals: CheckpointInput['totals'];
  /** The run ends with this answer (no calls to run). */
  final: { stopReason: StopReason; output: string } | null;
  /** The calls, classified in the order the model listed them (empty for a final answer). */
  calls: ClassifiedCall[];
  toRun: CallToRun[];
  pause: CheckpointInput['pause'];
  /** The assistant message as recorded (ids normalized, provider and model noted). */
  message: Message;
}

export interface PlanInput {
  st: RunState;
  k: number;
  /** 'tools', or the finalize reason of a call made without tools. */
  callMode: CallMode;
  response: ModelResponse;
  /** Deltas still buffered: they go into the checkpoint, in order, before its own events. */
  tailDeltas: NewEvent[];
  catalog: ReadonlyMap<string, CatalogEntry>;
  prices: PriceTable;
  nowMs: number;
  /** Call ids the run already used (a first checkpoint attempt found them): renamed this time. */
  taken?: ReadonlySet<string>;
}

/**
 * Iteration k's model response → the checkpoint and what follows it. Pure: no I/O, the same input always gives the
 * same plan (ids aside: renamed call ids are generated). The worker records the checkpoint, then acts on the plan.
 */
export function planResponse(p: PlanInput): ResponsePlan {
  const { st, k, response: res } = p;
  const request = st.request;
  const u = res.usage;
  const cost = p.prices.cost(res.provider, res.model, u);
  const total = u.promptTokens + u.completionTokens;
  const iterationUsage = { promptTokens: u.promptTokens, completionTokens: u.completionTokens, reasoningTokens: u.reasoningTokens, totalTokens: total, costUsd: cost };
  // which provider and model answered is recorded on the message itself (fallbacks make it vary per iteration)
  const message: Message = normalizeCallIds({ ...res.message, providerData: { ...res.message.providerData, provider: res.provider, model: res.model } }, res.provider, p.taken);
  const totals = {
    promptTokens: st.usage.promptTokens + u.promptTokens,
    completionTokens: st.usage.completionTokens + u.completionTokens,
    reasoningTokens: st.usage.reasoningTokens + u.reasoningTokens,
    totalTokens: st.usage.totalTokens + total,
    costUsd: Math.round((st.usage.costUsd + cost) * 1e8) / 1e8,
    llmCalls: st.usage.llmCalls + 1,
  };
  const base = { iteration: k, message, totals, iterationUsage };
  if (p.callMode !== 'tools' || !message.toolCalls?.length) {
    delete message.toolCalls; // tools were withheld: a stray call cannot be answered, so it is not kept
    const output = message.content ?? '';
    const final: { stopReason: StopReason; output: string } = { stopReason: p.callMode === 'tools' ? 'final_answer' : p.callMode, output };
    const checkpoint: CheckpointInput = {
      ...base, final, calls: [], pendingFinal: '', repeat: { fingerprint: st.repeatFingerprint, count: st.repeatCount },
      events: [
        ...p.tailDeltas,
        { type: 'iteration.completed', data: { iteration: k, usage: iterationUsage } },
        { type: 'run.completed', data: { output, stopReason: final.stopReason, iterations: k, usage: { ...totals, toolCalls: st.usage.toolCalls } } },
      ],
    };
    return { checkpoint, iterationUsage, totals, final, calls: [], toRun: [], pause: undefined, message };
  }
  const limits = request.limits;
  const budgetExhausted = (limits.maxTotalTokens !== null && totals.totalTokens >= limits.maxTotalTokens) || (limits.maxCostUsd !== null && st.usage.costUsd + cost >= limits.maxCostUsd);
  const classified = classifyCalls({
    calls: message.toolCalls,
    request,
    catalog: p.catalog as Map<string, CatalogEntry>,
    repeat: { fingerprint: st.repeatFingerprint, count: st.repeatCount },
    toolCallsLeft: limits.maxToolCalls === null ? Infinity : limits.maxToolCalls - st.usage.toolCalls,
    budgetExhausted,
  });
  const cap = maxResultTokens(request);
  for (const c of classified.calls) {
    c.meta.iteration = k;
    c.meta.maxResultTokens = cap;
  }
  const paused = classified.calls.filter((c) => c.pause && !c.outcome);
  const pause = paused.length
    ? {
        pending: paused.map((c) => ({ callId: c.call.id, name: c.call.name, arguments: argumentsForDisplay(c.call.arguments), pauseType: c.pause! })),
        expiresAt: p.nowMs + request.approval.timeoutMs,
      }
    : undefined;
  const events = [...p.tailDeltas, ...classificationEvents(classified.calls)];
  if (pause) events.push({ type: 'run.paused', data: { pending: pause.pending, expiresAt: new Date(pause.expiresAt).toISOString() } });
  const checkpoint: CheckpointInput = {
    ...base, final: null,
    calls: classified.calls.map((c) => ({ id: c.call.id, meta: c.meta, outcome: c.outcome })),
    pendingFinal: classified.pendingFinal,
    repeat: classified.repeat,
    events,
    pause,
  };
  const toRun = classified.calls.filter((c) => !c.outcome && !c.pause).map((c) => ({ callId: c.call.id, name: c.call.name, arguments: c.call.arguments, pool: c.meta.pool }));
  return { checkpoint, iterationUsage, totals, final: null, calls: classified.calls, toRun, pause, message };
}
