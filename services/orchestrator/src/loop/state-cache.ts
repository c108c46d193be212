import type { RunState } from '@agentloop/runtime';

/**
 * The state each run was left in by this process's last checkpoint, for the next iteration's job: usually the
 * same process takes it, and then it needs no read. Entries are taken once; the start script's compare-and-set
 * is what makes a cached entry trustworthy.
 */
export class StateCache {
  private readonly entries = new Map<string, RunState>();

  constructor(private readonly max = 5000) {}

  put(state: RunState): void {
    this.entries.delete(state.id);
    this.entries.set(state.id, state);
    if (this.entries.size > this.max) this.entries.delete(this.entries.keys().next().value!);
  }

  /** The cached state when it is at `iteration`, removed from the cache. */
  take(runId: string, iteration: number): RunState | undefined {
    const s = this.entries.get(runId);
    this.entries.delete(runId);
    return s && s.iteration === iteration ? s : undefined;
  }

  forget(runId: string): void {
    this.entries.delete(runId);
  }
}
