/**
 * One delivery of an iteration job, as the loop's deciders see it (the context gate, the start of an iteration): who
 * it is, what it keeps across its waits, and the waits it may ask for. The worker shell adapts its queue's job to it
 * (services/orchestrator loop/job-delivery.ts), so the deciders depend on no queue library.
 */
export interface IterationDelivery {
  /** `jobId@lockToken`: the owner a step records (fencing: a delivery that lost its job is refused). */
  readonly owner: string;
  /** The context ladder's steps taken for this iteration (0 none; kept across the summary wait). */
  readonly compressStage: number;
  setCompressStage(stage: number): Promise<void>;
  /**
   * A summary of the run's older turns, waited for without holding a worker: when this delivery can park until it
   * (or its deadline, `deadlineMs`) is done, this throws the shell's wait signal and the delivery runs again then;
   * otherwise it returns at once.
   */
  waitForSummary(runId: string, k: number, tv: number, deadlineMs: number): Promise<void>;
  /** The keys (`<queue key>:<job id>`) of this delivery's children (tool jobs) that failed for good. */
  failedChildren(): Promise<string[]>;
}
