import { FlowProducer, Queue, Worker } from 'bullmq';
import type { Redis } from 'ioredis';

/** A queue and a worker for timing single round trips of a no-op job (add → processed → completed). */
export class RoundTripProbe {
  private readonly queue: Queue;
  private readonly worker: Worker;
  private readonly workerRedis: Redis;
  private readonly pending = new Map<string, (t: number) => void>();
  private n = 0;

  constructor(redis: Redis, prefix: string) {
    this.queue = new Queue('rt', { connection: redis, prefix });
    this.workerRedis = redis.duplicate();
    this.worker = new Worker('rt', async () => undefined, { connection: this.workerRedis, prefix, concurrency: 1 });
    this.worker.on('completed', (job) => this.pending.get(job.id!)?.(performance.now()));
  }

  ready(): Promise<unknown> {
    return this.worker.waitUntilReady();
  }

  /** One round trip, in seconds. */
  async sample(): Promise<number> {
    const id = `j${this.n++}`;
    const t0 = performance.now();
    const done = new Promise<number>((r) => this.pending.set(id, r));
    await this.queue.add('noop', {}, { jobId: id, removeOnComplete: true });
    const t = await done;
    this.pending.delete(id);
    return (t - t0) / 1000;
  }

  async close(): Promise<void> {
    await this.worker.close();
    await this.queue.close();
    this.workerRedis.disconnect();
  }
}

/** Round trips one at a time, back to back (the baseline of the per-iteration overhead target). */
export async function rawRoundTrip(redis: Redis, prefix: string, samples: number): Promise<number[]> {
  const probe = new RoundTripProbe(redis, prefix);
  await probe.ready();
  const out: number[] = [];
  for (let i = 0; i < samples; i++) out.push(await probe.sample());
  await probe.close();
  return out;
}

/**
 * The same hops as an agentloop iteration with one tool call, and nothing else: an iteration job that adds a flow
 * whose parent is the next iteration's job and whose child is a no-op tool job.
 */
export async function rawFlowLoop(
  redis: Redis,
  prefix: string,
  runs: number,
  iterations: number,
  concurrency: { orchestrator: number; tools: number },
) {
  const flows = new FlowProducer({ connection: redis, prefix });
  const starts = new Map<string, number[]>();
  let finished = 0;
  let resolveAll!: () => void;
  const allDone = new Promise<void>((r) => (resolveAll = r));
  const opts = { removeOnComplete: { age: 3600 }, attempts: 8 };
  const iter = new Worker(
    'raw-iter',
    async (job) => {
      const { run, k } = job.data as { run: string; k: number };
      (starts.get(run) ?? starts.set(run, []).get(run)!).push(performance.now());
      if (k >= iterations) {
        if (++finished === runs) resolveAll();
        return;
      }
      await flows.add({
        name: 'iter',
        queueName: 'raw-iter',
        data: { run, k: k + 1 },
        opts: { ...opts, jobId: `${run}-${k + 1}` },
        children: [{ name: 'tool', queueName: 'raw-tool', data: { run, k }, opts: { ...opts, jobId: `${run}-t${k}` } }],
      });
    },
    { connection: redis.duplicate(), prefix, concurrency: concurrency.orchestrator },
  );
  const tool = new Worker('raw-tool', async () => ({ ok: true }), {
    connection: redis.duplicate(),
    prefix,
    concurrency: concurrency.tools,
  });
  await Promise.all([iter.waitUntilReady(), tool.waitUntilReady()]);
  const queue = new Queue('raw-iter', { connection: redis, prefix });
  const t0 = performance.now();
  await queue.addBulk(
    Array.from({ length: runs }, (_, i) => ({
      name: 'iter',
      data: { run: `r${i}`, k: 1 },
      opts: { ...opts, jobId: `r${i}-1` },
    })),
  );
  await allDone;
  const seconds = (performance.now() - t0) / 1000;
  await Promise.all([iter.close(), tool.close(), queue.close(), flows.close()]);
  const perIteration: number[] = [];
  for (const s of starts.values()) for (let i = 1; i < s.length; i++) perIteration.push((s[i]! - s[i - 1]!) / 1000);
  return { seconds, perIteration };
}
