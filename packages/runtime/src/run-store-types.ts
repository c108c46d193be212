import type {
  FinalizeReason,
  ErrorInfo,
  Message,
  NewEvent,
  PendingCall,
  RunRequest,
  StopReason,
  ToolCallData,
  ToolOutcome,
  Usage,
} from '@agentloop/protocol';
import type { OutputRepair, RunState } from './run-state.js';

export type { ToolCallData };

/** The shapes RunStore's methods take and give (what its scripts read and write). */

export interface CreateRunInput {
  runId: string;
  tenant: string;
  request: RunRequest;
  /** Messages the transcript starts with (system prompt, input). */
  messages: Message[];
  bodyHash: string;
  idempotencyKey?: string;
  /** An intake request that failed validation becomes a run that is failed from the start. */
  invalid?: { error: ErrorInfo & { details?: unknown } };
  /**
   * The tenant's activeRuns limit (null: none). At the limit, 'refuse' creates nothing (HTTP answers 429), 'fail'
   * creates the run failed with code rate_limited (queue intake: a job is never silently dropped).
   */
  activeRuns?: { limit: number; atLimit: 'refuse' | 'fail' } | null;
  /** A backend enqueued it on `requests`: when it ends, its result is added to `results` (SPEC §2). */
  fromQueue?: boolean;
  /** The traceparent of the run's root span (SPEC §8), stored with the run; absent when tracing is off. */
  traceparent?: string;
}

export type CreateRunResult =
  /** `waitsFor`: the thread's active run this one waits for (threadPolicy enqueue or interrupt), '' when it starts now. */
  | {
      created: true;
      runId: string;
      status: 'queued' | 'failed';
      waitsFor: string;
      /** The tenant's queued runs right after this one was created (it included): its first job's rank. */
      queued: number;
    }
  /** threadPolicy reject, and the thread has a run queued, running or paused. */
  | { created: false; threadBusy: true; activeRunId: string }
  | { created: false; runId: string; bodyHash: string }
  | { created: false; limited: true; activeRuns: number }
  /** The run id is another tenant's run (queue intake names its run ids). */
  | { created: false; taken: true };

export const THREAD_BUSY_ERROR: ErrorInfo = {
  code: 'thread_busy',
  message: 'the thread has a run queued, running or paused (threadPolicy reject)',
};

export const RATE_LIMITED_ERROR: ErrorInfo = {
  code: 'rate_limited',
  message: 'the tenant is at its activeRuns limit (AGENTLOOP_TENANT_LIMITS)',
};

/** Finished runs stay readable this long by default (AGENTLOOP_RUN_RETENTION_S). */
export const DEFAULT_RETENTION_S = 604_800;

/** A position in a run listing: the last run returned (its createdAt score and id). */
export interface ListCursor {
  score: number;
  runId: string;
}

export interface CheckpointInput {
  iteration: number;
  message: Message;
  /** The run's usage totals after this call, as the caller computed them (for its events and budgets). */
  totals: Omit<Usage, 'toolCalls'>;
  /**
   * This call's usage, added to the stored totals by the checkpoint itself (one convention with addUsage: increments,
   * so a summary billed while the model was called is never overwritten) [none].
   */
  billed?: Omit<Usage, 'toolCalls'>;
  /** This call's usage as iteration.completed reports it. */
  iterationUsage: Partial<Usage>;
  /** The run completes with this answer (`outputJson`: its parsed structured output, for runs with `output.schema`). */
  final: { stopReason: StopReason; output: string; outputJson?: unknown } | null;
  /** The run fails with the answer recorded (structured output still invalid after its repair turn). */
  failure?: ErrorInfo;
  /** Structured output: the answer is invalid and one repair turn follows (no calls; the next iteration makes it). */
  outputRepair?: OutputRepair;
  calls: Array<{ id: string; meta: CallMeta; outcome: ToolOutcome | null }>;
  pendingFinal: FinalizeReason | '';
  repeat: { fingerprint: string; count: number };
  events: NewEvent[];
  /** Calls that wait for a person: the run parks (status paused) until every one is decided. */
  pause?: { pending: PendingCall[]; expiresAt: number };
}

/** One decision, ready for the script: the outcome it records (deny, submit_result) and the call's new meta (edited
 * arguments); its tool.call event's template is built from them (event-templates.ts). */
export interface PreparedDecision {
  callId: string;
  action: 'approve' | 'deny' | 'submit_result';
  outcome: ToolOutcome | null;
  /** An edit: the call's new record. */
  meta: CallMeta | null;
  /** An edit: the new arguments, as the call's tool.call event shows them (the model's as its originalArguments). */
  editedArguments?: unknown;
}

export type DecisionOutcome =
  | { kind: 'resumed'; names: string[]; approved: string[]; state: RunState }
  | { kind: 'waiting'; names: string[]; remaining: string[] }
  | { kind: 'not_found' }
  | { kind: 'not_paused'; status: string }
  | { kind: 'conflict'; callId: string }
  | { kind: 'invalid'; callId: string; pauseType: string };

/** What the calls hash keeps about a call (written once, with the model response). */
export interface CallMeta {
  name: string;
  /** Raw argument JSON text, as the model produced it. */
  arguments: string;
  /** The arguments as shown in events: JSON text of the parsed value (or of the raw string). */
  display: string;
  pool: string;
  iteration: number;
  /** Cap of the result text the model sees (kept for calls dispatched later, after a decision). */
  maxResultTokens?: number;
}

/** One local call's outcome for RunCalls.recordToolResults: the arguments recordToolResult takes for it. */
export interface LocalResult {
  callId: string;
  outcome: ToolOutcome;
  eventData: ToolCallData;
  /** Its `running` event, when its start was not recorded first (a read tool safe to retry). */
  unstarted?: ToolCallData;
  /** The delivery that recorded its start ('' with `unstarted`). */
  owner: string;
}

/**
 * How a run ends (endRun-18.lua): at `expectIteration` (null: wherever it is), with its status, stop reason, error and
 * events; `owner`: the delivery that owns the iteration's model call ('' or absent: no fence).
 */
export interface EndInput {
  expectIteration: number | null;
  status: 'completed' | 'failed' | 'cancelled';
  stopReason: StopReason | null;
  error: ErrorInfo | null;
  events: NewEvent[];
  owner?: string;
}
