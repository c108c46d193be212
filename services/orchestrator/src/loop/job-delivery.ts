import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import type { IterationDelivery } from '@agentloop/runtime';

/**
 * The delivery a job is: its id and its lock token. The iteration's owner is recorded this way, so that a job BullMQ
 * hands on (a dead worker, or a missed lock renewal while the first delivery still runs) takes the model call over
 * explicitly and fences the earlier delivery out, rather than both streaming into the same iteration.
 */
export const ownerOf = (job: Job): string => `${job.id ?? ''}@${job.token ?? ''}`;

/**
 * A BullMQ job as the loop sees it: the worker shell's one adapter between the iteration and BullMQ (the waits the
 * iteration asks for — a summary, a delay — are carried out by the shell, IterationWorker). `redis` reads the lock of
 * another job of the queue.
 */
export function jobDelivery(job: Job, token: string | undefined, redis: Redis, lockMs: number): IterationDelivery {
  return {
    owner: ownerOf(job),
    jobId: job.id,
    get compressStage() {
      return (job.data as { compressStage?: number }).compressStage ?? 0; // updateData replaces job.data
    },
    async setCompressStage(stage) {
      await job.updateData({ ...job.data, compressStage: stage });
    },
    async failedChildren() {
      return Object.keys(await job.getIgnoredChildrenFailures());
    },
    async mayTakeOver(from) {
      if (!token || (await job.extendLock(token, lockMs)) !== 1) return false;
      const at = from.lastIndexOf('@');
      return (await redis.get(`${job.queueQualifiedName}:${from.slice(0, at)}:lock`)) !== from.slice(at + 1);
    },
  };
}
