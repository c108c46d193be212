import type { Job } from 'bullmq';
import type { CallMode } from '@agentloop/protocol';
import type { LocalResult, RunState, Started } from '@agentloop/runtime';

/** An iteration StartAhead started behind the previous one's checkpoint: the job goes on with its model call. */
export interface StartedAhead {
  state: RunState;
  k: number;
  callMode: CallMode;
  started: Started;
}

/** Most iterations one job runs in a row: then the run goes on in a job of its own, wherever a worker has room. */
export const MAX_IN_ONE_JOB = 16;

/**
 * Which iteration jobs go on to their run's next iteration in place, and when they may (SPEC §6, local tools: the
 * cheapest path). An iteration whose calls all ran in the job (local tools, or none left to run) needs no job of its
 * own for the next one, and skipping it saves a publish, a fetch and a completion — most of an iteration's Redis
 * commands and the hop's latency. Only while this worker has a free slot: a job that goes on then keeps no other job
 * waiting (a waiting job would have taken the free slot), so fair scheduling between tenants still decides the order
 * under load. A job that goes on stays the run's recorded owner; a redelivery of it takes the run up where it stopped
 * (decide-advance.ts, chainedIteration).
 */
export class Continuations {
  private inFlight = 0;
  private stopped = false;
  private readonly counts = new WeakMap<Job, number>();
  private readonly next = new WeakMap<Job, number>();
  private readonly results = new WeakMap<Job, LocalResult[]>();
  private readonly startedAhead = new WeakMap<Job, StartedAhead>();

  constructor(private readonly slots: number) {}

  begin(): void {
    this.inFlight++;
  }

  end(job: Job): void {
    this.inFlight--;
    this.next.delete(job);
    this.counts.delete(job);
    this.results.delete(job);
    this.startedAhead.delete(job);
  }

  /** No job goes on any more (the worker drains). */
  stop(): void {
    this.stopped = true;
  }

  /** Whether `job` runs iteration k+1 itself; a yes is a commitment (no job is published for it). */
  take(job: Job, k: number): boolean {
    const n = this.counts.get(job) ?? 1;
    if (this.stopped || this.inFlight >= this.slots || n >= MAX_IN_ONE_JOB) return false;
    this.counts.set(job, n + 1);
    this.next.set(job, k + 1);
    return true;
  }

  /** The batch's results not recorded yet: the next iteration's start records them (one step instead of two). */
  defer(job: Job, results: LocalResult[]): void {
    this.results.set(job, results);
  }

  /** The results `job` deferred, taken once. */
  deferred(job: Job): LocalResult[] | undefined {
    const r = this.results.get(job);
    this.results.delete(job);
    return r;
  }

  /** Iteration k+1, which `job` committed to (take), will not run in it after all (its checkpoint was refused). */
  withdraw(job: Job): void {
    this.next.delete(job);
    this.results.delete(job);
  }

  /** The iteration `job` goes on to was started already (StartAhead): it goes on with its model call. */
  started(job: Job, ahead: StartedAhead): void {
    this.startedAhead.set(job, ahead);
  }

  /** The iteration `job` started ahead for iteration k, taken once. */
  takeStarted(job: Job, k: number): StartedAhead | undefined {
    const a = this.startedAhead.get(job);
    this.startedAhead.delete(job);
    return a?.k === k ? a : undefined;
  }

  /** The iteration `job` goes on to, taken once (undefined: the job is done). */
  following(job: Job): number | undefined {
    const k = this.next.get(job);
    this.next.delete(job);
    return k;
  }
}
