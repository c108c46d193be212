import { QUEUES } from '@agentloop/protocol';
import type { Metrics, QueueSet, RunStore, ToolCatalog } from '@agentloop/runtime';
import type { Redis } from 'ioredis';

/** Sets the queue and parked-run gauges from Redis, just before /metrics is answered. */
export async function updateQueueGauges(
  metrics: Metrics,
  queues: QueueSet,
  catalog: ToolCatalog,
  redis: Redis,
  store: RunStore,
): Promise<void> {
  const pools = new Set([...(await catalog.all()).values()].map((t) => t.pool));
  for (const p of pools) queues.get(QUEUES.tools(p));
  const states = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;
  await Promise.all(
    queues.known().map(async (q) => {
      const counts = await q.getJobCounts(...states);
      for (const s of states) metrics.queueJobs.set({ queue: q.name, state: s }, counts[s] ?? 0);
    }),
  );
  const [parked, overdue] = await Promise.all([
    redis.zcard(store.keys.parkedRuns),
    redis.zcount(store.keys.parkedRuns, '-inf', Date.now() - 60_000),
  ]);
  metrics.runsParked.set(parked);
  metrics.runsParkedOverdue.set(overdue);
}
