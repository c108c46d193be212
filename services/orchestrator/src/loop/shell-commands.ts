/**
 * What an iteration asks of the worker shell, the one place that knows BullMQ (IterationWorker): waits that must not
 * hold a worker slot.
 */
export type ShellCommand =
  /** Park the job until the summary of the run's older turns is written (or its deadline passes), then run it again. */
  | { kind: 'wait_summary'; runId: string; k: number; tv: number; deadlineMs: number }
  /** Run the job again in `ms` (every model of the chain asked for a long pause). */
  | { kind: 'delay'; ms: number }
  /** Run the same iteration again now (its predicted start did not hold: ResponseStep). */
  | { kind: 'again' };

export const isShellCommand = (x: unknown): x is ShellCommand => typeof x === 'object' && x !== null && 'kind' in x;
