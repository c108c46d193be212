import {
  argumentsForDisplay,
  iterationCompletedData,
  type CallMode,
  type ErrorInfo,
  type Message,
  type NewEvent,
  type StopReason,
  type Usage,
} from '@agentloop/protocol';
import type { ModelResponse, PriceTable } from '@agentloop/llm';
import { maxResultTokens, type CatalogEntry, type CheckpointInput, type RunState } from '@agentloop/runtime';
import { classificationEvents, classifyCalls, type ClassifiedCall } from './classify-calls.js';
import { normalizeCallIds } from './normalize-call-ids.js';
import type { OutputCheck } from '../output/output-validator.js';
import { repairMessage } from '../output/output-intake.js';

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
  final: { stopReason: StopReason; output: string; outputJson?: unknown } | null;
  /** The run fails with the answer recorded (structured output still invalid after its repair turn). */
  failure: ErrorInfo | null;
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
  /** Runs with `output.schema`, for a final answer: its text parsed and validated (finalOutputCheck). */
  outputCheck?: OutputCheck;
}

/** Whether a response is the run's answer: a call without tools, or one that asked for no tool. */
export const isFinalAnswer = (callMode: CallMode, res: { message: Pick<Message, 'toolCalls'> }): boolean =>
  callMode !== 'tools' || !res.message.toolCalls?.length;

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
  const iterationUsage = {
    promptTokens: u.promptTokens,
    completionTokens: u.completionTokens,
    reasoningTokens: u.reasoningTokens,
    cachedTokens: u.cachedTokens,
    totalTokens: total,
    costUsd: cost,
  };
  // which provider and model answered is recorded on the message itself (fallbacks make it vary per iteration)
  const message: Message = normalizeCallIds(
    { ...res.message, providerData: { ...res.message.providerData, provider: res.provider, model: res.model } },
    res.provider,
    p.taken,
  );
  const totals = {
    promptTokens: st.usage.promptTokens + u.promptTokens,
    completionTokens: st.usage.completionTokens + u.completionTokens,
    reasoningTokens: st.usage.reasoningTokens + u.reasoningTokens,
    cachedTokens: (st.usage.cachedTokens ?? 0) + u.cachedTokens,
    totalTokens: st.usage.totalTokens + total,
    costUsd: Math.round((st.usage.costUsd + cost) * 1e8) / 1e8,
    llmCalls: st.usage.llmCalls + 1,
  };
  const billed = { ...iterationUsage, llmCalls: 1 };
  const base = { iteration: k, message, totals, billed, iterationUsage };
  if (p.callMode !== 'tools' || !message.toolCalls?.length) {
    // isFinalAnswer
    delete message.toolCalls; // tools were withheld: a stray call cannot be answered, so it is not kept
    return finalAnswerPlan(p, base);
  }
  const limits = request.limits;
  const budgetExhausted =
    (limits.maxTotalTokens !== null && totals.totalTokens >= limits.maxTotalTokens) ||
    (limits.maxCostUsd !== null && st.usage.costUsd + cost >= limits.maxCostUsd);
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
        pending: paused.map((c) => ({
          callId: c.call.id,
          name: c.call.name,
          arguments: argumentsForDisplay(c.call.arguments),
          pauseType: c.pause!,
        })),
        expiresAt: p.nowMs + request.approval.timeoutMs,
      }
    : undefined;
  const events = [...p.tailDeltas, ...classificationEvents(classified.calls)];
  if (pause)
    events.push({
      type: 'run.paused',
      data: { pending: pause.pending, expiresAt: new Date(pause.expiresAt).toISOString() },
    });
  const checkpoint: CheckpointInput = {
    ...base,
    final: null,
    calls: classified.calls.map((c) => ({ id: c.call.id, meta: c.meta, outcome: c.outcome })),
    pendingFinal: classified.pendingFinal,
    repeat: classified.repeat,
    events,
    pause,
  };
  const toRun = classified.calls
    .filter((c) => !c.outcome && !c.pause)
    .map((c) => ({ callId: c.call.id, name: c.call.name, arguments: c.call.arguments, pool: c.meta.pool }));
  return {
    checkpoint,
    iterationUsage,
    totals,
    final: null,
    failure: null,
    calls: classified.calls,
    toRun,
    pause,
    message,
  };
}

type PlanBase = Pick<CheckpointInput, 'iteration' | 'message' | 'totals' | 'billed'> & {
  iterationUsage: ResponsePlan['iterationUsage'];
};

/**
 * A final answer (or a finalize call's). Without `output.schema` the run completes with it. With one, the answer is
 * parsed and validated: valid, the run completes with `outputJson` too; invalid, the same checkpoint records the
 * answer and grants the one repair turn (the next iteration appends the errors as a user message and calls the
 * model again, in the same call mode), or — the repair turn already spent — fails the run `output_invalid`.
 */
function finalAnswerPlan(p: PlanInput, base: PlanBase): ResponsePlan {
  const { st, k } = p;
  const { message, totals, iterationUsage } = base;
  const output = message.content ?? '';
  const stopReason: StopReason = p.callMode === 'tools' ? 'final_answer' : p.callMode;
  const repeat = { fingerprint: st.repeatFingerprint, count: st.repeatCount };
  const usage = { ...totals, toolCalls: st.usage.toolCalls };
  const spec = st.request.output;
  if (spec && !p.outputCheck)
    throw new Error('planResponse: a final answer of a run with output.schema needs its outputCheck');
  const check = spec ? p.outputCheck! : null;
  const same = { iterationUsage, totals, calls: [], toRun: [], pause: undefined, message };
  if (check && !check.ok) {
    const repair = !st.outputRepair;
    const events: NewEvent[] = [
      ...p.tailDeltas,
      { type: 'output.invalid', data: { iteration: k, errors: check.errors, repair } },
    ];
    if (repair) {
      const outputRepair = { iteration: k + 1, message: repairMessage(spec!.name, check.errors) };
      // no calls: phase tools with an empty batch; a finalize call's reason carries over to the repair call
      const checkpoint: CheckpointInput = {
        ...base,
        final: null,
        calls: [],
        pendingFinal: p.callMode === 'tools' ? '' : p.callMode,
        repeat,
        events,
        outputRepair,
      };
      return { ...same, checkpoint, final: null, failure: null };
    }
    const failure = {
      code: 'output_invalid',
      message: `the structured answer is still invalid after its repair turn: ${check.errors.join('; ')}`,
    };
    events.push(
      { type: 'iteration.completed', data: iterationCompletedData(k, iterationUsage) },
      { type: 'run.failed', data: { error: failure } },
    );
    return {
      ...same,
      checkpoint: { ...base, final: null, failure, calls: [], pendingFinal: '', repeat, events },
      final: null,
      failure,
    };
  }
  const structured = check ? { outputJson: check.value } : {};
  const final = { stopReason, output, ...structured };
  const checkpoint: CheckpointInput = {
    ...base,
    final,
    calls: [],
    pendingFinal: '',
    repeat,
    events: [
      ...p.tailDeltas,
      { type: 'iteration.completed', data: iterationCompletedData(k, iterationUsage) },
      { type: 'run.completed', data: { output, ...structured, stopReason, iterations: k, usage } },
    ],
  };
  return { ...same, checkpoint, final, failure: null };
}
