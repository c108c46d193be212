import type { Partition } from '@agentloop/runtime';
import type { DecisionService } from './decisions/decision-service.js';

/** A partition as the orchestrator's services use it: its stores and publishers, and the decisions on its runs. */
export interface ServicePartition extends Partition {
  readonly decisions: DecisionService;
}
