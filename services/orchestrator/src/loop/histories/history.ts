import { PriceTable } from '@agentloop/llm';
import type { CatalogEntry, RunState } from '@agentloop/runtime';
import type { PlanInput } from '../plan-response.js';
import { PURE_PLANNER, type Planner } from '../planner.js';

/**
 * One decision of a recorded run, as the orchestrator made it: the pure deciders' input and what they answered.
 * Histories are recorded from real runs (`record-histories` in the CLI's test support), committed under
 * `histories/v<schemaVersion>/`, and never regenerated: replaying them proves that a newer build decides the same
 * transitions for states an older one stored (Temporal's replay test).
 */
export type HistoryEntry =
  | { kind: 'decideAdvance'; st: RunState; k: number; nowMs: number; jobId?: string; action: unknown }
  | {
      kind: 'planResponse';
      input: Omit<PlanInput, 'catalog' | 'prices' | 'taken'> & {
        catalog: Array<[string, CatalogEntry]>;
        taken?: string[];
      };
      plan: unknown;
    };

/** JSON as stored: undefined fields dropped (what a plan holds and what replaying it gives are compared this way). */
export const asStored = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/** The recorded planner input, revived (the catalog as a Map, taken ids as a Set, the built-in prices). */
export function planInputOf(e: Extract<HistoryEntry, { kind: 'planResponse' }>['input']): PlanInput {
  const { catalog, taken, ...rest } = e;
  return { ...rest, catalog: new Map(catalog), prices: new PriceTable(), ...(taken ? { taken: new Set(taken) } : {}) };
}

/** Wraps the pure deciders so that every decision is handed to `record` (inputs and outputs as stored). */
export function recordingPlanner(record: (e: HistoryEntry) => void, inner: Planner = PURE_PLANNER): Planner {
  return {
    decideAdvance(st, k, nowMs, jobId) {
      const action = inner.decideAdvance(st, k, nowMs, jobId);
      record(asStored({ kind: 'decideAdvance', st, k, nowMs, jobId, action }) as HistoryEntry);
      return action;
    },
    planResponse(input) {
      const plan = inner.planResponse(input);
      const { catalog, prices: _prices, taken, ...rest } = input;
      record(
        asStored({
          kind: 'planResponse',
          input: { ...rest, catalog: [...catalog.entries()], ...(taken ? { taken: [...taken] } : {}) },
          plan,
        }) as HistoryEntry,
      );
      return plan;
    },
  };
}
