import { decideAdvance } from './decide-advance.js';
export type { AdvanceAction } from './decide-advance.js';
import { planResponse } from './plan-response.js';

/**
 * The loop's decisions, pure (no I/O: the same input always gives the same answer): what an advance job must do, and
 * what a model response means for the run. The worker only routes and does I/O around them.
 */
export interface Planner {
  decideAdvance: typeof decideAdvance;
  planResponse: typeof planResponse;
}

export const PURE_PLANNER: Planner = { decideAdvance, planResponse };
