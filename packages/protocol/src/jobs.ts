import { z } from 'zod';
import { DecisionSchema } from './decisions.js';
import { SAFE_CALL_ID_RE } from './ids.js';
import { CallModeSchema, FinalizeReasonSchema } from './run-status.js';

/** A tenant id (from AGENTLOOP_API_KEYS or a queue job): it becomes part of Redis key names. */
export const TENANT_ID_RE = /^[A-Za-z0-9_.@-]{1,128}$/;
export const TenantIdSchema = z.string().regex(TENANT_ID_RE, 'a tenant id matches [A-Za-z0-9_.@-]{1,128}');

/** A run id: generated (`run_…`) or given at queue intake; safe in keys and job ids. */
export const RunIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'a run id matches [A-Za-z0-9_-]{1,64}');

/**
 * The W3C traceparent a job's spans hang under (SPEC §8): the run's root span, or the span of its resume. Set by the
 * publisher only when tracing is on; a malformed one is ignored (the job's spans fall back to the run's stored root).
 */
export const JobTraceSchema = z.string().max(128).optional();

/** `advance` job on the orchestrator queue: start iteration `iteration` of the run (jobId `<runId>-<iteration>`). */
export const AdvanceJobSchema = z.object({
  runId: RunIdSchema,
  iteration: z.number().int().positive(),
  /**
   * What the publisher expects the job to do, when it knew (a first iteration, a resume): start the iteration with this call mode
   * straight away — one compare-and-set that also returns the state, instead of a read and then the start. A
   * stale plan fails the compare-and-set and the job reads the state and decides as usual.
   */
  plan: z
    .object({
      callMode: CallModeSchema,
      pendingFinal: z.union([FinalizeReasonSchema, z.literal('')]),
      iterUsage: z.record(z.string(), z.unknown()),
    })
    .optional(),
  trace: JobTraceSchema,
});
export type AdvanceJob = z.infer<typeof AdvanceJobSchema>;
export const advanceJobId = (runId: string, iteration: number, suffix = '') =>
  `${runId}-${iteration}${suffix ? `-${suffix}` : ''}`;

/** `expire` job (delayed by approval.timeoutMs) on the orchestrator queue: iteration `iteration` paused too long. */
export const ExpireJobSchema = z.object({ runId: RunIdSchema, iteration: z.number().int().positive() });
export const expireJobId = (runId: string, iteration: number) => `${runId}-${iteration}-expire`;

/** `summarize` job on the compressor queue: summarize the run's older turns for iteration `iteration` at transcript version `tv`. */
export const CompressJobSchema = z.object({
  runId: RunIdSchema,
  iteration: z.number().int(),
  tv: z.number().int(),
  trace: JobTraceSchema,
});
export type CompressJob = z.infer<typeof CompressJobSchema>;
export const compressJobId = (runId: string, iteration: number, tv: number) => `${runId}-${iteration}-c${tv}`;

/**
 * `summary_deadline` job (delayed) on the orchestrator queue: the summary asked for iteration `iteration` at version `tv`
 * is due. When none was recorded by then (no compressor running, or one died mid-summary and was not replaced), the
 * iteration stops waiting for it and prunes instead (SPEC §3).
 */
export const SummaryDeadlineJobSchema = CompressJobSchema;
export const summaryDeadlineJobId = (runId: string, iteration: number, tv: number) => `${runId}-${iteration}-d${tv}`;
/** How long an iteration waits for its summary [60 s, SPEC §3]. */
export const SUMMARY_DEADLINE_MS = 60_000;

/** Cap of a tool result the model sees, when a call's record names none. */
export const DEFAULT_RESULT_TOKENS = 20_000;

/** The pool of local tools (SPEC §6): run by the orchestrator, in the iteration, with no tool job and no hop. */
export const LOCAL_POOL = 'local';
/** Longest a local tool may take (SPEC §6): it runs inside an iteration. */
export const LOCAL_TIMEOUT_MS = 5000;

/** A call to publish to its pool (or to run in place, pool `local`). */
export interface CallToRun {
  callId: string;
  name: string;
  arguments: string;
  pool: string;
  /** Cap of the result text the model sees. */
  maxResultTokens?: number;
}

/** One tool call, on queue `tools-<pool>` (jobId: toolJobId). */
export const ToolJobSchema = z.object({
  runId: RunIdSchema,
  tenantId: z.string(),
  callId: z.string(),
  name: z.string(),
  arguments: z.string(),
  iteration: z.number().int(),
  /** Cap of the result text the model sees: min(context.toolResultMaxTokens, a quarter of the context window). */
  maxResultTokens: z.number().int().positive().default(DEFAULT_RESULT_TOKENS),
  trace: JobTraceSchema,
  /**
   * The calls published with this one when the next iteration waits for nothing else (RunScheduler.afterCheckpoint):
   * no flow parent is added for them, and the delivery that finds them all answered publishes iteration
   * `iteration + 1` itself (RunScheduler.afterBatch). Absent: the job is a child of the next iteration's job (a
   * parked run's batch, a resume), which BullMQ moves on once its children are done.
   */
  batch: z.array(z.string()).optional(),
});
export type ToolJob = z.infer<typeof ToolJobSchema>;

/**
 * A tool call's job id, `<runId>.<callId>`. Both ids are `[A-Za-z0-9_-]` (RunIdSchema, SAFE_CALL_ID_RE), so a `.`
 * between them splits one way only; the `-` of earlier builds did not (run `a-b` call `c` and run `a` call `b-c`
 * were both `a-b-c`, and BullMQ kept only the first). Not `:`: BullMQ refuses it in custom ids.
 */
export const toolJobId = (runId: string, callId: string) => `${runId}.${callId}`;

/**
 * The call a tool job of run `runId` runs, read from its id (toolJobId), or null when the id is no tool job of that
 * run. Ids of earlier builds (`<runId>-<callId>`) are read too: their jobs may be in flight
 * during a rolling deploy, and the run is known, so they are unambiguous here.
 */
export function callIdOfToolJob(runId: string, jobId: string): string | null {
  for (const sep of ['.', '-']) {
    const callId = jobId.startsWith(runId + sep) ? jobId.slice(runId.length + 1) : '';
    if (SAFE_CALL_ID_RE.test(callId)) return callId;
  }
  return null;
}

/** Queue intake (SPEC §2): a backend enqueues this on `requests`; the job's return value is `{id}`. */
export const RequestJobSchema = z.object({
  tenantId: TenantIdSchema,
  idempotencyKey: z.string().min(1).max(255).optional(),
  runId: RunIdSchema.optional(),
  request: z.unknown(),
});
export type RequestJob = z.infer<typeof RequestJobSchema>;

/** What a backend gets on `results` when a run it enqueued ends (SPEC §2): one job per run, job id = run id. */
export interface ResultJob {
  runId: string;
  tenantId: string;
  status: string;
  stopReason: string | null;
  output: string | null;
  /** Only for runs with output.schema. */
  outputJson?: unknown;
  /** null unless the run failed. */
  error: { code: string; message: string } | null;
  usage: Record<string, number>;
  metadata: Record<string, unknown>;
}

export const DecisionJobSchema = z.object({
  tenantId: TenantIdSchema,
  runId: RunIdSchema,
  decisions: z.array(DecisionSchema).min(1),
});
export type DecisionJob = z.infer<typeof DecisionJobSchema>;
