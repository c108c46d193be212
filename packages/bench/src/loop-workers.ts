import { FlowProducer, Queue, Worker, type Job, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';
import { DEFAULT_JOB_OPTIONS } from '@agentloop/runtime';

/**
 * The BullMQ side of a bench loop, as the product's is laid out: an iteration queue and a tool queue, each worked on
 * its own connection with the product's concurrency and job options, and one flow per iteration that calls tools —
 * parent = the next iteration's job, children = its tool jobs.
 */
export class LoopWorkers {
  private readonly connections: Redis[] = [];
  private workers: Worker[] = [];
  private readonly flows: FlowProducer;
  private readonly queue: Queue;

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly queues: { iter: string; tool: string },
    private readonly concurrency: { orchestrator: number; tools: number },
    private readonly label: string,
  ) {
    this.flows = new FlowProducer({ connection: redis, prefix });
    this.queue = new Queue(queues.iter, { connection: redis, prefix, defaultJobOptions: DEFAULT_JOB_OPTIONS });
  }

  async start<T>(
    iterate: (job: Job<{ run: string; k: number }>) => Promise<unknown>,
    tool: (job: Job<T>) => Promise<unknown>,
  ): Promise<void> {
    const worker = <D>(queue: string, fn: (job: Job<D>) => Promise<unknown>, concurrency: number) => {
      const connection = this.redis.duplicate();
      this.connections.push(connection);
      const w = new Worker(queue, fn as Processor, { connection, prefix: this.prefix, concurrency });
      w.on('error', (err) => console.error(`${this.label} worker:`, err));
      return w;
    };
    this.workers = [
      worker(this.queues.iter, iterate, this.concurrency.orchestrator),
      worker(this.queues.tool, tool, this.concurrency.tools),
    ];
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  /** A run's first iteration job. */
  async first(run: string): Promise<void> {
    await this.queue.add('iter', { run, k: 1 }, { jobId: `${run}-1` });
  }

  /** Iteration k's tool jobs, and iteration k + 1's job after them. */
  async next<T>(run: string, k: number, tools: T[]): Promise<void> {
    await this.flows.add({
      name: 'iter',
      queueName: this.queues.iter,
      data: { run, k: k + 1 },
      opts: { ...DEFAULT_JOB_OPTIONS, jobId: `${run}-${k + 1}` },
      children: tools.map((data, i) => ({
        name: 'tool',
        queueName: this.queues.tool,
        data,
        opts: { ...DEFAULT_JOB_OPTIONS, jobId: `${run}-${k}-t${i}`, ignoreDependencyOnFailure: true },
      })),
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    await Promise.all([this.queue.close(), this.flows.close()]);
    for (const c of this.connections) c.disconnect();
  }
}
