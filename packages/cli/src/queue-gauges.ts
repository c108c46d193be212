import { QUEUES } from '@agentloop/protocol';
import type { Metrics, Partition, ToolCatalog } from '@agentloop/runtime';

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'waiting-children', 'completed', 'failed'] as const;

/** Sets the queue and parked-run gauges from Redis, summed over the partitions, just before /metrics is answered. */
export async function updateQueueGauges(
  metrics: Metrics,
  partitions: readonly Partition[],
  catalog: ToolCatalog,
): Promise<void> {
  const pools = new Set([...(await catalog.all()).values()].map((t) => t.pool));
  const jobs = new Map<string, number>(); // `<queue>\u0000<state>` → jobs, every partition's
  let parked = 0;
  let overdue = 0;
  await Promise.all(
    partitions.map(async ({ queues, store }) => {
      for (const p of pools) queues.get(QUEUES.tools(p));
      await Promise.all(
        queues.known().map(async (q) => {
          const counts = await q.getJobCounts(...STATES);
          for (const s of STATES) {
            const key = `${q.name}\u0000${s}`;
            jobs.set(key, (jobs.get(key) ?? 0) + (counts[s] ?? 0));
          }
        }),
      );
      const [n, late] = await Promise.all([
        store.redis.zcard(store.keys.parkedRuns),
        store.redis.zcount(store.keys.parkedRuns, '-inf', Date.now() - 60_000),
      ]);
      parked += n;
      overdue += late;
    }),
  );
  for (const [key, n] of jobs) {
    const [queue, state] = key.split('\u0000');
    metrics.queueJobs.set({ queue: queue!, state: state! }, n);
  }
  metrics.runsParked.set(parked);
  metrics.runsParkedOverdue.set(overdue);
}
