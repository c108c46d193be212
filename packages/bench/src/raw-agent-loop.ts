import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { RawCall, RawModel } from './raw-model-call.js';
import { LoopWorkers } from './loop-workers.js';
import type { IterationTiming } from './iteration-latency.js';

interface RunState {
  conv: unknown[];
  calls: RawCall[];
  done: () => void;
}

/**
 * The floor an agent loop on BullMQ cannot go below: per iteration one job that makes the streamed model call and,
 * when the model called tools, adds one flow (parent = the next iteration's job, children = one no-op tool job per
 * call); the next iteration reads the tools' results from its children. The product's job options, the product's
 * concurrency; the transcript lives in this process's memory (no persistence, no events, no checks).
 */
export class RawAgentLoop {
  private readonly runs = new Map<string, RunState>();
  private readonly workers: LoopWorkers;
  private n = 0;
  /** Iterations (model calls) processed so far. */
  iterations = 0;
  /** Each iteration's start (performance.now(), ms, on entering the job) and its model call, as the product reports them. */
  onIterationTimed?: (t: IterationTiming) => void;

  constructor(
    redis: Redis,
    prefix: string,
    private readonly model: RawModel,
    private readonly prior: ReadonlyArray<{ role: string; content: string }>,
    concurrency: { orchestrator: number; tools: number },
  ) {
    this.workers = new LoopWorkers(redis, prefix, { iter: 'raw-iter', tool: 'raw-tool' }, concurrency, 'raw loop');
  }

  async start(): Promise<void> {
    await this.workers.start(
      (job) => this.iterate(job),
      async (job: Job<{ i: number; call: RawCall }>) => ({ i: job.data.i, result: { ok: true } }),
    );
  }

  /** One run from its first job to the model's answer. */
  async run(): Promise<void> {
    const id = `r${this.n++}`;
    const done = new Promise<void>((resolve) =>
      this.runs.set(id, { conv: this.model.start(this.prior), calls: [], done: resolve }),
    );
    await this.workers.first(id);
    await done;
  }

  private async iterate(job: Job<{ run: string; k: number }>): Promise<void> {
    const startedAt = performance.now();
    const { run, k } = job.data;
    const state = this.runs.get(run);
    if (!state) return; // a redelivery after the run ended
    if (state.calls.length) {
      const results: unknown[] = [];
      for (const v of Object.values(await job.getChildrenValues<{ i: number; result: unknown }>()))
        results[v.i] = v.result;
      this.model.answer(state.conv, state.calls, results);
    }
    this.iterations++;
    const m0 = performance.now();
    const calls = await this.model.call(state.conv);
    this.onIterationTimed?.({ runId: run, iteration: k, startedAt, modelSeconds: (performance.now() - m0) / 1000 });
    state.calls = calls;
    if (!calls.length) {
      this.runs.delete(run);
      state.done();
      return;
    }
    await this.workers.next(
      run,
      k,
      state.calls.map((call, i) => ({ run, i, call })),
    );
  }

  async close(): Promise<void> {
    await this.workers.close();
  }
}
