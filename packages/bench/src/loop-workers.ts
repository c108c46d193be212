import { Worker, type Job, type Processor } from 'bullmq';
import type { Redis } from 'ioredis';

/** The two workers of a bench loop (iterations, tools), each on its own connection, with the product's concurrency. */
export class LoopWorkers {
  private readonly connections: Redis[] = [];
  private workers: Worker[] = [];

  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly concurrency: { orchestrator: number; tools: number },
    private readonly label: string,
  ) {}

  async start<I, T>(queues: { iter: string; tool: string }, iterate: (job: Job<I>) => Promise<unknown>, tool: (job: Job<T>) => Promise<unknown>): Promise<void> {
    const worker = <D>(queue: string, fn: (job: Job<D>) => Promise<unknown>, concurrency: number) => {
      const connection = this.redis.duplicate();
      this.connections.push(connection);
      const w = new Worker(queue, fn as Processor, { connection, prefix: this.prefix, concurrency });
      w.on('error', (err) => console.error(`${this.label} worker:`, err));
      return w;
    };
    this.workers = [worker(queues.iter, iterate, this.concurrency.orchestrator), worker(queues.tool, tool, this.concurrency.tools)];
    await Promise.all(this.workers.map((w) => w.waitUntilReady()));
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.close()));
    for (const c of this.connections) c.disconnect();
  }
}
