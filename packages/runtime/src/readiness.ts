import type { Worker } from 'bullmq';
import type { RedisConnection } from './redis.js';
import { redisProblem } from './redis.js';

/** A role's worker, as readiness sees it. */
export interface RoleWorker {
  role: string;
  isRunning(): boolean;
}

/** Whether a BullMQ worker takes jobs: started, and neither stopped nor closing (a drain has begun). */
export function workerTakingJobs(worker: Worker | null | undefined): boolean {
  return !!worker && worker.isRunning() && !worker.closing;
}

/**
 * Why this process is not ready, or null when it is: the one check behind every `/readyz` (the api's, and the
 * metrics port's of a process without the api). A connection that cannot serve commands, then a role's worker that
 * does not take jobs. Answers at once from what the connections know, also while Redis is away.
 */
export function notReadyReason(connections: readonly RedisConnection[], workers: readonly RoleWorker[]): string | null {
  for (const c of connections) {
    const problem = redisProblem(c);
    if (problem) return problem;
  }
  const stopped = workers.find((w) => !w.isRunning());
  return stopped ? `${stopped.role} worker not running` : null;
}

/** The `/readyz` answer for a reason (null: ready). */
export function readyzAnswer(reason: string | null): {
  status: 200 | 503;
  body: { status: 'ready' } | { status: 'not_ready'; reason: string };
} {
  return reason === null
    ? { status: 200, body: { status: 'ready' } }
    : { status: 503, body: { status: 'not_ready', reason } };
}
