import { WaitingChildrenError, type Job } from 'bullmq';
import type { IterationDelivery, RunScheduler } from '@agentloop/runtime';

/**
 * The delivery a job is: its id and its lock token. The iteration's owner is recorded this way, so that a job BullMQ
 * hands on (a dead worker, or a missed lock renewal while the first delivery still runs) takes the model call over
 * explicitly and fences the earlier delivery out, rather than both streaming into the same iteration.
 */
export const ownerOf = (job: Job): string => `${job.id ?? ''}@${job.token ?? ''}`;

/** A BullMQ job as the loop's deciders see it: the worker shell's one adapter between them and BullMQ. */
export function jobDelivery(job: Job, token: string | undefined, scheduler: RunScheduler): IterationDelivery {
  return {
    owner: ownerOf(job),
    compressStage: (job.data as { compressStage?: number }).compressStage ?? 0,
    async setCompressStage(stage) {
      await job.updateData({ ...job.data, compressStage: stage });
    },
    async waitForSummary(runId, k, tv, deadlineMs) {
      await scheduler.compress(job, runId, k, tv, deadlineMs);
      // a parent waits for its child holding no worker slot; BullMQ runs it again when the child is done
      if (token && (await job.moveToWaitingChildren(token))) throw new WaitingChildrenError();
    },
    async failedChildren() {
      return Object.keys(await job.getIgnoredChildrenFailures());
    },
  };
}
