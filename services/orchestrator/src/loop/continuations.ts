import type { CallMode } from '@agentloop/protocol';
import type { IterationDelivery, LocalResult, RunState, Started } from '@agentloop/runtime';

/** What the round trip behind a predicted start answered: use the model call ('go'), run k+1 again, or stop. */
export type Confirmation = 'go' | 'again' | 'done';

/** An iteration StartAhead started behind the previous one's checkpoint: the job goes on with its model call. */
export interface StartedAhead {
  state: RunState;
  k: number;
  callMode: CallMode;
  started: Started;
  /** A start predicted before Redis answered (ResponseStep): its call's output waits for this. */
  confirm?: Promise<Confirmation>;
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
  private readonly counts = new WeakMap<IterationDelivery, number>();
  private readonly next = new WeakMap<IterationDelivery, number>();
  private readonly results = new WeakMap<IterationDelivery, LocalResult[]>();
  private readonly startedAhead = new WeakMap<IterationDelivery, StartedAhead>();

  constructor(private readonly slots: number) {}

  begin(): void {
    this.inFlight++;
  }

  end(delivery: IterationDelivery): void {
    this.inFlight--;
    this.next.delete(delivery);
    this.counts.delete(delivery);
    this.results.delete(delivery);
    this.startedAhead.delete(delivery);
  }

  /** No job goes on any more (the worker drains). */
  stop(): void {
    this.stopped = true;
  }

  /** Whether `delivery` runs iteration k+1 itself; a yes is a commitment (no job is published for it). */
  take(delivery: IterationDelivery, k: number): boolean {
    const n = this.counts.get(delivery) ?? 1;
    if (this.stopped || this.inFlight >= this.slots || n >= MAX_IN_ONE_JOB) return false;
    this.counts.set(delivery, n + 1);
    this.next.set(delivery, k + 1);
    return true;
  }

  /** The batch's results not recorded yet: the next iteration's start records them (one step instead of two). */
  defer(delivery: IterationDelivery, results: LocalResult[]): void {
    this.results.set(delivery, results);
  }

  /** The results `delivery` deferred, taken once. */
  deferred(delivery: IterationDelivery): LocalResult[] | undefined {
    const r = this.results.get(delivery);
    this.results.delete(delivery);
    return r;
  }

  /** Iteration k+1, which `delivery` committed to (take), will not run in it after all (its checkpoint was refused). */
  withdraw(delivery: IterationDelivery): void {
    this.next.delete(delivery);
    this.results.delete(delivery);
  }

  /** The iteration `delivery` goes on to was started already (StartAhead): it goes on with its model call. */
  started(delivery: IterationDelivery, ahead: StartedAhead): void {
    this.startedAhead.set(delivery, ahead);
  }

  /** The iteration `delivery` started ahead for iteration k, taken once. */
  takeStarted(delivery: IterationDelivery, k: number): StartedAhead | undefined {
    const a = this.startedAhead.get(delivery);
    this.startedAhead.delete(delivery);
    return a?.k === k ? a : undefined;
  }

  /** The iteration `delivery` goes on to, taken once (undefined: the job is done). */
  following(delivery: IterationDelivery): number | undefined {
    const k = this.next.get(delivery);
    this.next.delete(delivery);
    return k;
  }
}
