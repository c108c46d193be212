import { Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES } from '@agentloop/protocol';
import type { Logger } from '@agentloop/runtime';

/**
 * The compressor role. Context compression (summarize / prune) is its own issue; until it lands this worker
 * consumes the `compressor` queue and fails jobs with a clear message, so nothing waits on it silently.
 */
export class CompressorWorker {
  private worker: Worker | null = null;
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    private readonly logger: Logger,
  ) {}

  async start(): Promise<void> {
    this.worker = new Worker(
      QUEUES.compressor,
      async (): Promise<void> => {
        throw new Error('context compression is not available in this build');
      },
      { connection: this.redis.duplicate(), prefix: this.prefix, concurrency: 4 },
    );
    this.worker.on('error', (err) => this.logger.error({ err }, 'compressor worker error'));
    await this.worker.waitUntilReady();
  }

  handBack(): void {} // short jobs: nothing worth aborting

  async close(): Promise<void> {
    await this.worker?.close();
  }
}
