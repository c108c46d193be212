import { Queue, Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULT_JOB_OPTIONS } from '@agentloop/runtime';
import type { RawCall, RawModel } from './raw-model-call.js';

interface RunState {
  conv: unknown[];
  done: () => void;
}

/**
 * The floor for local tools (issue 26): the raw loop with the tool inline — per iteration one job that makes the
 * streamed model call, runs the no-op tool in place and adds the next iteration's job; no flow, no tool job. The
 * product's job options and iteration concurrency; the transcript in this process's memory (no persistence).
 */
export class RawInlineLoop {
  private readonly runs = new Map<string, RunState>();
  private readonly queue: Queue;
  private readonly connection: Redis;
  private worker: Worker | null = null;
  private n = 0;
  iterations = 0;

  constructor(
    redis: Redis,
    private readonly prefix: string,
    private readonly model: RawModel,
    private readonly prior: ReadonlyArray<{ role: string; content: string }>,
    private readonly concurrency: number,
  ) {
    this.connection = redis.duplicate();
    this.queue = new Queue('inline-iter', { connection: redis, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
  }

  async start(): Promise<void> {
    this.worker = new Worker('inline-iter', (job: Job<{ run: string; k: number }>) => this.iterate(job), {
      connection: this.connection,
      prefix: this.prefix,
      concurrency: this.concurrency,
    });
    this.worker.on('error', (err) => console.error('raw inline loop worker:', err));
    await this.worker.waitUntilReady();
  }

  async run(): Promise<void> {
    const id = `r${this.n++}`;
    const done = new Promise<void>((resolve) =>
      this.runs.set(id, { conv: this.model.start(this.prior), done: resolve }),
    );
    await this.queue.add('iter', { run: id, k: 1 }, { jobId: `${id}-1` });
    await done;
  }

  private async iterate(job: Job<{ run: string; k: number }>): Promise<void> {
    const { run, k } = job.data;
    const state = this.runs.get(run);
    if (!state) return;
    this.iterations++;
    const calls: RawCall[] = await this.model.call(state.conv);
    if (!calls.length) {
      this.runs.delete(run);
      state.done();
      return;
    }
    const results = await Promise.all(calls.map(async () => ({ ok: true })));
    this.model.answer(state.conv, calls, results);
    await this.queue.add('iter', { run, k: k + 1 }, { jobId: `${run}-${k + 1}` });
  }

  async close(): Promise<void> {
    await this.worker?.close();
    await this.queue.close();
    this.connection.disconnect();
  }
}
