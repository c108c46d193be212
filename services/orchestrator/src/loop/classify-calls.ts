import {
  type FinalizeReason,
  argumentsForDisplay,
  canonicalJson,
  clipText,
  jsonTextProblem,
  toolCallData,
  toolErrorOutcome,
  tryParseJson,
  type NewEvent,
  type RunRequest,
  type ToolCall,
  type ToolOutcome,
  wellFormedJson,
} from '@agentloop/protocol';
import type { CallMeta, CatalogEntry } from '@agentloop/runtime';

export type PauseType = 'awaiting_approval' | 'requires_client_execution';

export interface ClassifiedCall {
  call: ToolCall;
  meta: CallMeta;
  /** Set when the call is answered without running (unknown tool, loop, budget, headless denial…). */
  outcome: ToolOutcome | null;
  /** Why the call was not run, for agentloop_tools_skipped_total. */
  skipReason?: 'loop_detected' | 'budget_exceeded' | 'headless' | 'max_iterations';
  pause?: PauseType;
}

export interface ClassifyInput {
  calls: ToolCall[];
  request: RunRequest;
  /** One view of the catalog, read again if it lacked a called tool (catalogForCalls): every verdict comes from it. */
  catalog: Map<string, CatalogEntry>;
  repeat: { fingerprint: string; count: number };
  /** Calls that may still run under maxToolCalls (Infinity when unlimited). */
  toolCallsLeft: number;
  /** A token or cost budget is exhausted: nothing of this batch runs. */
  budgetExhausted: boolean;
}

export interface ClassifyResult {
  calls: ClassifiedCall[];
  repeat: { fingerprint: string; count: number };
  pendingFinal: FinalizeReason | '';
}

/** Why a call must wait for a person (SPEC §5), or null when it may run at once. */
export function pauseReason(entry: CatalogEntry | undefined, name: string, request: RunRequest): PauseType | null {
  if (request.clientTools.some((t) => t.name === name)) return 'requires_client_execution';
  if (!entry) return null;
  if (entry.sideEffect === 'critical') return 'awaiting_approval';
  if (request.approval.require.includes(name)) return 'awaiting_approval';
  if (entry.sideEffect === 'external' && !request.approval.autoApprove.includes(name)) return 'awaiting_approval';
  return null;
}

export function fingerprint(call: ToolCall): string {
  if (jsonTextProblem(call.arguments)) return `${call.name}\u0000${call.arguments}`; // never walked: compared as text
  const p = tryParseJson(call.arguments);
  return `${call.name}\u0000${p.ok ? canonicalJson(p.value) : call.arguments}`;
}

/**
 * Decides, for every call of a model response, whether it runs, waits for a person, or is answered at once —
 * in the order the model listed them. Pure: the caller records the result in one checkpoint.
 */
export function classifyCalls(input: ClassifyInput): ClassifyResult {
  const { request, catalog } = input;
  let { fingerprint: fp, count } = input.repeat;
  let left = input.toolCallsLeft;
  let pendingFinal: FinalizeReason | '' = input.budgetExhausted ? 'budget_exceeded' : '';
  const clientNames = new Set(request.clientTools.map((t) => t.name));
  const allowed = new Set([...request.tools, ...clientNames]);
  // from the same view as the verdict: the answer never offers the tool it calls unknown
  const available = [...allowed].filter((name) => catalog.has(name) || clientNames.has(name));
  const out: ClassifiedCall[] = input.calls.map((call) => {
    const entry = catalog.get(call.name);
    const meta: CallMeta = {
      name: call.name,
      arguments: call.arguments,
      display: wellFormedJson(argumentsForDisplay(call.arguments)),
      pool: entry?.pool ?? 'default',
      iteration: 0,
    };
    const f = fingerprint(call);
    count = f === fp ? count + 1 : 1;
    fp = f;
    const answered = (outcome: ToolOutcome, skipReason?: ClassifiedCall['skipReason']): ClassifiedCall => ({
      call,
      meta,
      outcome,
      ...(skipReason ? { skipReason } : {}),
    });
    if (count >= request.limits.repeatLimit) {
      pendingFinal ||= 'loop_detected';
      return answered(
        toolErrorOutcome(
          'loop_detected',
          `The same call to ${clipText(call.name, 100)} with the same arguments was made ${count} times in a row; it was not executed again.`,
        ),
        'loop_detected',
      );
    }
    if (input.budgetExhausted)
      return answered(
        toolErrorOutcome('skipped', 'Skipped: the run has used up its token or cost budget.'),
        'budget_exceeded',
      );
    const malformed = call.providerData?.malformed;
    if (typeof malformed === 'string')
      return answered(
        toolErrorOutcome(
          'invalid_arguments',
          `Your function call could not be parsed (${malformed}). Call the function again with its arguments as a JSON object matching its parameters.`,
        ),
      );
    // checked on the text, before anything parses or walks it (a model may send any size and nesting)
    const unsafe = jsonTextProblem(call.arguments);
    if (unsafe)
      return answered(
        toolErrorOutcome(
          'invalid_arguments',
          `The arguments of this call cannot be used: ${unsafe}. Call the function again with a JSON object matching its parameters.`,
        ),
      );
    if (!allowed.has(call.name) || (!entry && !clientNames.has(call.name)))
      return answered(
        toolErrorOutcome(
          'unknown_tool',
          `Unknown tool '${clipText(call.name, 100)}'. Available tools: ${available.join(', ') || 'none'}.`,
        ),
      );
    if (left <= 0) {
      pendingFinal ||= 'budget_exceeded';
      return answered(
        toolErrorOutcome('skipped', 'Skipped: the run reached its maximum number of tool calls (maxToolCalls).'),
        'budget_exceeded',
      );
    }
    const pause = pauseReason(entry, call.name, request);
    if (pause) {
      const autoOk =
        pause === 'awaiting_approval' &&
        entry?.sideEffect !== 'critical' &&
        request.approval.autoApprove.includes(call.name) &&
        !request.approval.require.includes(call.name);
      if (request.mode === 'headless' && !autoOk) {
        const why =
          pause === 'requires_client_execution'
            ? `${call.name} must be executed by the client, and nobody is attached in headless mode`
            : `${call.name} requires approval (side effect: ${entry?.sideEffect ?? 'client'}), and nobody can approve in headless mode`;
        return answered(toolErrorOutcome('denied', `Tool denied (headless): ${why}.`), 'headless');
      }
      if (!autoOk) {
        left--;
        return { call, meta, outcome: null, pause };
      }
    }
    left--;
    return { call, meta, outcome: null };
  });
  return { calls: out, repeat: { fingerprint: fp, count }, pendingFinal };
}

/** The tool.call events of a freshly classified batch: `proposed` for each, and the final one of answered calls. */
export function classificationEvents(calls: ClassifiedCall[]): NewEvent[] {
  const events: NewEvent[] = [];
  for (const c of calls) {
    const shown = { callId: c.call.id, name: c.call.name, arguments: argumentsForDisplay(c.call.arguments) };
    events.push({ type: 'tool.call', data: toolCallData(shown, 'proposed') });
    if (c.outcome) events.push({ type: 'tool.call', data: toolCallData(shown, c.outcome.status, c.outcome) });
    else if (c.pause) events.push({ type: 'tool.call', data: toolCallData(shown, c.pause) });
  }
  return events;
}
