/** Something that can be drained: stop fetching, let in-flight work finish, and hand back what cannot. */
export interface Drainable {
  /** Stop taking jobs; resolves when in-flight jobs have ended. */
  close(): Promise<void>;
  /** The drain deadline passed: abort in-flight work so its jobs are handed back (retried elsewhere at once). */
  handBack(): void;
  /** Whether it takes jobs: started, not stopped, not draining (readiness: readiness.ts). */
  isRunning(): boolean;
}

/**
 * SIGTERM semantics (SPEC §1): every worker stops fetching at once; in-flight jobs get `deadlineMs` to finish; then
 * the rest are aborted — their processors throw, BullMQ releases the lock and retries the job on another worker
 * after a short backoff instead of waiting for a stall check.
 */
export async function drainAll(items: Drainable[], deadlineMs: number): Promise<void> {
  const closing = Promise.all(items.map((i) => i.close()));
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((r) => (timer = setTimeout(() => r('deadline'), deadlineMs)));
  const first = await Promise.race([closing.then(() => 'closed' as const), deadline]);
  clearTimeout(timer);
  if (first === 'deadline') for (const i of items) i.handBack();
  await closing;
}

/** Thrown by a processor whose work was cut off by shutdown: the job is retried elsewhere. */
export class HandedBackError extends Error {
  constructor() {
    super('handed back: this process is shutting down');
    this.name = 'HandedBackError';
  }
}

/** Several drainables as one (a role's workers in each partition it serves); `after` runs once all have closed. */
export function drainGroup(items: Drainable[], after?: () => Promise<void>): Drainable {
  return {
    close: async () => {
      await Promise.all(items.map((i) => i.close()));
      await after?.();
    },
    handBack: () => items.forEach((i) => i.handBack()),
    isRunning: () => items.every((i) => i.isRunning()),
  };
}
