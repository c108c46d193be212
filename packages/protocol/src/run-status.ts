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

/** The table as a Lua value: `{ created = { queued = true, … }, … }`. */
export function statusTransitionsLua(): string {
  const rows = Object.entries(STATUS_TRANSITIONS).map(([from, tos]) => `${from} = { ${tos.map((t) => `${t} = true`).join(', ')} }`);
  return `{ ${rows.join(', ')} }`;
}

/** Where a run is inside its status (queued → model → tools → model … → done; paused while waiting for decisions). */
export const RunPhaseSchema = z.enum(['queued', 'model', 'tools', 'paused', 'done']);
export type RunPhase = z.infer<typeof RunPhaseSchema>;

/** Why the next model call is made without tools, asking for a final answer. */
export const FinalizeReasonSchema = z.enum(['max_iterations', 'loop_detected', 'budget_exceeded', 'context_limit']);
export type FinalizeReason = z.infer<typeof FinalizeReasonSchema>;

/** What an iteration's model call is: a normal call with tools, or a finalize call (tools withheld) for a reason. */
export const CallModeSchema = z.union([z.literal('tools'), FinalizeReasonSchema]);
export type CallMode = z.infer<typeof CallModeSchema>;
