import { z } from 'zod';
import type { RunStatus } from './snapshot.js';

/**
 * The run's status transitions, the one table both sides use: TypeScript decides with it, and every Lua script's
 * commit() refuses a status change it does not list (the scripts are loaded with this table compiled in).
 * `created` is the state before the run exists.
 */
export const STATUS_TRANSITIONS: Readonly<Record<RunStatus | 'created', readonly RunStatus[]>> = {
  created: ['queued', 'failed'],
  queued: ['running', 'failed', 'cancelled'],
  running: ['paused', 'completed', 'failed', 'cancelled'],
  paused: ['running', 'failed', 'cancelled'],
  completed: [],
  failed: [],
  cancelled: [],
};

export function canTransition(from: RunStatus | 'created', to: RunStatus): boolean {
  return from === to || STATUS_TRANSITIONS[from].includes(to);
}

/** The status table as a Lua value: `{ created = { queued = true, … }, … }`. */
export function statusTransitionsLua(): string {
  return transitionsLua(STATUS_TRANSITIONS);
}

/** Where a run is inside its status (queued → model → tools → model … → done; paused while waiting for decisions). */
export const RunPhaseSchema = z.enum(['queued', 'model', 'tools', 'paused', 'done']);
export type RunPhase = z.infer<typeof RunPhaseSchema>;

/**
 * The run's phase transitions, checked by every script's commit() as the status ones are (`created`: before the run
 * exists): a start takes queued or tools to model (compare-and-set on the expected phase), a checkpoint takes model to
 * tools, paused or done, the last decision takes paused to tools, and an end takes any live phase to done.
 */
export const PHASE_TRANSITIONS: Readonly<Record<RunPhase | 'created', readonly RunPhase[]>> = {
  created: ['queued', 'done'],
  queued: ['model', 'done'],
  model: ['tools', 'paused', 'done'],
  tools: ['model', 'done'],
  paused: ['tools', 'done'],
  done: [],
};

/** A call's status in its run (`c:<id>:st`): recorded queued, running under an owner, done once answered. */
export const CallStatusSchema = z.enum(['queued', 'running', 'done']);
export type CallStatus = z.infer<typeof CallStatusSchema>;

/**
 * A call's status transitions (`unknown`: not recorded yet). A checkpoint records a call queued (or done, answered
 * in the response's step: an unknown tool, a reserved id); a tool-runner marks it running, under its owner (another
 * delivery may take a running call over: running stays running); an answer — a result, a decision, a close — makes it
 * done, once. Nothing leaves done.
 */
export const CALL_TRANSITIONS: Readonly<Record<CallStatus | 'unknown', readonly CallStatus[]>> = {
  unknown: ['queued', 'done'],
  queued: ['running', 'done'],
  running: ['done'],
  done: [],
};

/**
 * The run's other control fields, declared as the status and phase are: the steps (run scripts, by name) that may set
 * each one (a non-empty value) and those that may clear it (''). Every script's commit() refuses a write this table
 * does not list (the scripts are loaded with it compiled in), so a field cannot change anywhere but where it says.
 */
export const RUN_FIELD_WRITERS: Readonly<
  Record<string, { readonly set: readonly string[]; readonly clear: readonly string[]; readonly means: string }>
> = {
  owner: {
    set: ['startIteration', 'claimModelCall'],
    clear: ['startIteration'],
    means: "the delivery (`jobId@lockToken`) that owns the iteration's model call",
  },
  callMode: {
    set: ['startIteration'],
    clear: ['createRun'],
    means: 'tools, or the reason the call is made without them (a finalize call)',
  },
  pendingFinal: {
    set: ['checkpointResponse', 'recordToolResult', 'recordToolResults', 'closeToolCall', 'startIteration'],
    clear: ['createRun', 'checkpointResponse'],
    means: 'the reason the next call will be made without tools (a budget spent by a call, a loop detected)',
  },
  resuming: {
    set: ['applyDecisions'],
    clear: ['startIteration'],
    means: "the last decision flipped the paused run; its resumed iteration's start clears it",
  },
  edited: {
    set: ['applyDecisions'],
    clear: ['startIteration'],
    means: "a decision rewrote the batch's arguments in the transcript (caches read it again)",
  },
  cancel: {
    set: ['requestCancel'],
    clear: ['createRun'],
    means: 'a cancel was requested; the run ends at its next step',
  },
  outputRepair: {
    set: ['checkpointResponse'],
    clear: [],
    means: 'the structured-output repair call: its iteration and message (made once)',
  },
  thrWait: {
    set: ['createRun'],
    clear: ['startThreadRun'],
    means: "a thread's run waits for the thread's earlier run to end",
  },
};

/** RUN_FIELD_WRITERS as a Lua value: `{ owner = { set = { startIteration = true, … }, clear = { … } }, … }`. */
export function fieldWritersLua(): string {
  const names = (xs: readonly string[]) => `{ ${xs.map((x) => `${x} = true`).join(', ')} }`;
  const rows = Object.entries(RUN_FIELD_WRITERS).map(
    ([f, w]) => `${f} = { set = ${names(w.set)}, clear = ${names(w.clear)} }`,
  );
  return `{ ${rows.join(', ')} }`;
}

/** Whether a table allows `from` → `to` (staying put is always allowed). */
export function allows<S extends string>(table: Readonly<Record<string, readonly S[]>>, from: string, to: S): boolean {
  return from === to || (table[from]?.includes(to) ?? false);
}

/** A transition table as a Lua value: `{ created = { queued = true, … }, … }`. */
export function transitionsLua(table: Readonly<Record<string, readonly string[]>>): string {
  const rows = Object.entries(table).map(([from, tos]) => `${from} = { ${tos.map((t) => `${t} = true`).join(', ')} }`);
  return `{ ${rows.join(', ')} }`;
}

/** Why the next model call is made without tools, asking for a final answer. */
export const FinalizeReasonSchema = z.enum(['max_iterations', 'loop_detected', 'budget_exceeded', 'context_limit']);
export type FinalizeReason = z.infer<typeof FinalizeReasonSchema>;

/** What an iteration's model call is: a normal call with tools, or a finalize call (tools withheld) for a reason. */
export const CallModeSchema = z.union([z.literal('tools'), FinalizeReasonSchema]);
export type CallMode = z.infer<typeof CallModeSchema>;
