/**
 * One delivery of an iteration job, as the loop's deciders see it (the context gate, the start of an iteration): who
 * it is, what it keeps across its waits, and the waits it may ask for. The worker shell adapts its queue's job to it
 * (services/orchestrator loop/job-delivery.ts), so the deciders depend on no queue library.
 */
export interface IterationDelivery {
  /** `jobId@lockToken`: the owner a step records (fencing: a delivery that lost its job is refused). */
  readonly owner: string;
  /** The job's id: the same for every delivery of one job (a redelivery takes up what its job started). */
  readonly jobId: string | undefined;
  /** The context ladder's steps taken for this iteration (0 none; kept across the summary wait). */
  readonly compressStage: number;
  setCompressStage(stage: number): Promise<void>;
  /** The keys (`<queue key>:<job id>`) of this delivery's children (tool jobs) that failed for good. */
  failedChildren(): Promise<string[]>;
  /**
   * Whether this delivery may take over a call that the delivery `from` (an owner, `jobId@lockToken`) started: it still
   * holds its own job, and `from` no longer holds its (it crashed, or stalled past its lock).
   */
  mayTakeOver(from: string): Promise<boolean>;
}
