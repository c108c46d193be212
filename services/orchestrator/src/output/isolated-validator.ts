import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { OutputCheck } from './output-validator.js';

export type ValidatorRequest =
  { op: 'compile'; schema: Record<string, unknown> } | { op: 'check'; schema: Record<string, unknown>; text: string };
export type ValidatorReply = OutputCheck | { ok: true } | { ok: false; message: string };

/** The compiled worker, found from src/ (tests) and dist/ alike: both sit beside dist/ in the package. */
const WORKER_FILE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dist/output/validate-worker.js');

export interface IsolationLimits {
  /** Longest a compile or a check may take before the worker is stopped and the schema's answer is "too costly" [2000]. */
  budgetMs?: number;
  /** Heap of the worker thread, in MB [256]. */
  maxHeapMb?: number;
}

type Task = { req: ValidatorRequest; resolve: (r: ValidatorReply) => void };

/**
 * JSON Schema work on tenants' schemas, in a worker thread with a time and memory budget. A schema is the tenant's
 * and an answer the model's: together they can make a validator run for minutes (patterns such as `^\w*\w*\w*$`,
 * `anyOf` branches recursing through `$ref`, `uniqueItems` over a long array) or grow without bound — on the thread
 * that serves every other run. Here one task runs at a time (so its budget measures its own work); one over budget
 * (or out of memory) stops the worker, is answered as too costly, and the next task gets a fresh worker.
 */
export class IsolatedOutputValidator {
  private worker: Worker | null = null;
  /** The worker has loaded (its `ready` message): a task's budget counts its own work, not the thread's start. */
  private ready = false;
  private readonly queue: Task[] = [];
  private current: (Task & { timer: NodeJS.Timeout | null }) | null = null;

  constructor(private readonly limits: IsolationLimits = {}) {}

  /** Whether ajv can compile the schema (within the budget), with its reason when not. */
  async compile(schema: Record<string, unknown>): Promise<{ ok: true } | { ok: false; message: string }> {
    const r = await this.run({ op: 'compile', schema });
    return 'message' in r ? { ok: false, message: r.message } : { ok: true };
  }

  /** A final answer's text against the schema; a check over budget is an invalid answer that says so. */
  async check(schema: Record<string, unknown>, text: string): Promise<OutputCheck> {
    const r = await this.run({ op: 'check', schema, text });
    if ('message' in r) return { ok: false, errors: [r.message] };
    return 'errors' in r || 'value' in r ? r : { ok: false, errors: ['the answer could not be validated'] };
  }

  /** Stops the worker (tests; a process exits without it: the worker does not hold it open). */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    this.ready = false;
    await w?.terminate();
  }

  private run(req: ValidatorRequest): Promise<ValidatorReply> {
    return new Promise((resolve) => {
      this.queue.push({ req, resolve });
      this.next();
    });
  }

  private next(): void {
    if (this.current || !this.queue.length) return;
    const task = this.queue.shift()!;
    this.current = { ...task, timer: null };
    const w = this.ensureWorker();
    w.postMessage(task.req);
    if (this.ready) this.startBudget();
  }

  private startBudget(): void {
    if (!this.current || this.current.timer) return;
    const budget = this.limits.budgetMs ?? 2000;
    this.current.timer = setTimeout(
      () =>
        this.fail(`checking against output.schema took longer than ${budget} ms: the schema is too costly to check`),
      budget,
    );
  }

  private settle(reply: ValidatorReply): void {
    const task = this.current;
    if (!task) return;
    if (task.timer) clearTimeout(task.timer);
    this.current = null;
    task.resolve(reply);
    this.next();
  }

  /** The current task cannot finish: answer it, and give the next task a fresh worker. */
  private fail(message: string): void {
    const w = this.worker;
    this.worker = null;
    this.ready = false;
    void w?.terminate();
    this.settle({ ok: false, message });
  }

  private ensureWorker(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_FILE, { resourceLimits: { maxOldGenerationSizeMb: this.limits.maxHeapMb ?? 256 } });
    w.unref();
    // a thread that never loads cannot hold its task forever either
    const boot = setTimeout(() => {
      if (w === this.worker && !this.ready)
        this.fail('output.schema could not be checked: the validator did not start');
    }, 30_000);
    boot.unref();
    w.on('message', (reply: ValidatorReply | { ready: true }) => {
      if (w !== this.worker) return;
      if ('ready' in reply) {
        clearTimeout(boot);
        this.ready = true;
        return this.startBudget();
      }
      this.settle(reply);
    });
    w.on('error', (err) => {
      if (w === this.worker)
        this.fail(
          `output.schema could not be checked: ${/memory/i.test(err.message) ? 'the schema needs more memory than allowed' : err.message.slice(0, 300)}`,
        );
    });
    w.on('exit', () => {
      if (w === this.worker) this.fail('output.schema could not be checked: the validator stopped');
    });
    this.worker = w;
    return w;
  }
}

/**
 * Tenants' schema work kept apart: a few isolated workers (lanes), each tenant with a queue of its own and at most one
 * task in flight, tenants taken in turn when a lane frees up. One tenant's costly schemas then hold one lane at most:
 * every other tenant's checks go on on the others, instead of waiting behind them in one queue.
 */
export class OutputValidatorPool {
  private readonly lanes: Array<{ v: IsolatedOutputValidator; busy: boolean }>;
  private readonly waiting = new Map<string, Array<(v: IsolatedOutputValidator) => Promise<void>>>();
  private readonly inFlight = new Set<string>();

  constructor(size = 2, limits: IsolationLimits = {}) {
    this.lanes = Array.from({ length: Math.max(1, size) }, () => ({
      v: new IsolatedOutputValidator(limits),
      busy: false,
    }));
  }

  compile(schema: Record<string, unknown>, tenant = ''): Promise<{ ok: true } | { ok: false; message: string }> {
    return this.run(tenant, (v) => v.compile(schema));
  }

  check(schema: Record<string, unknown>, text: string, tenant = ''): Promise<OutputCheck> {
    return this.run(tenant, (v) => v.check(schema, text));
  }

  async close(): Promise<void> {
    await Promise.all(this.lanes.map((l) => l.v.close()));
  }

  private run<T>(tenant: string, task: (v: IsolatedOutputValidator) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const q = this.waiting.get(tenant) ?? [];
      q.push((v) => task(v).then(resolve, reject));
      this.waiting.set(tenant, q);
      this.dispatch();
    });
  }

  /** Free lanes take the next task of tenants in turn (Map order, a tenant moved to the back once served). */
  private dispatch(): void {
    for (const lane of this.lanes) {
      if (lane.busy) continue;
      const tenant = [...this.waiting.keys()].find((t) => !this.inFlight.has(t));
      if (tenant === undefined) return;
      const q = this.waiting.get(tenant)!;
      const task = q.shift()!;
      this.waiting.delete(tenant);
      if (q.length) this.waiting.set(tenant, q); // to the back of the turn
      lane.busy = true;
      this.inFlight.add(tenant);
      void task(lane.v).finally(() => {
        lane.busy = false;
        this.inFlight.delete(tenant);
        this.dispatch();
      });
    }
  }
}

/** The process's validators (intake and the iteration worker share them and their compiled schemas). */
export const outputValidator = new OutputValidatorPool();
