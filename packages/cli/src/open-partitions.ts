import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { QUEUES } from '@agentloop/protocol';
import { DecisionService, type ServicePartition } from '@agentloop/orchestrator';
import {
  Partitions,
  QueueSet,
  RUN_LAYOUT,
  RunStore,
  adoptPartitionCount,
  partitionOf,
  partitionPrefix,
  type Config,
  type Metrics,
  type ToolCatalog,
} from '@agentloop/runtime';

/**
 * The deployment's partitions (AGENTLOOP_PARTITIONS), and the ones this process's workers serve (`only`, else all),
 * once the checks at start pass: the partitions asked for exist, a smaller count drops no partition that still owes
 * runs (adoptPartitionCount), and no partition holds live runs of an earlier build's layout. Otherwise it throws the
 * reason the process must not start, before any role touches a run.
 */
export async function openPartitions(
  config: Config,
  connections: { redis: Redis; publisher: Redis },
  shared: { catalog: ToolCatalog; metrics: Metrics },
  only?: number[],
): Promise<{ partitions: Partitions<ServicePartition>; served: ServicePartition[] }> {
  const { redis, publisher } = connections;
  const stores = config.partitionPrefixes.map((prefix) => new RunStore(redis, prefix, config.runRetentionS));
  const served = only?.length ? [...new Set(only)].sort((a, b) => a - b) : stores.map((_, i) => i);
  const missing = served.filter((p) => !Number.isInteger(p) || p < 0 || p >= stores.length);
  if (missing.length)
    throw new Error(
      `--partitions ${missing.join(',')}: this deployment has partitions 0 to ${stores.length - 1} (AGENTLOOP_PARTITIONS=${stores.length})`,
    );
  const dropping = await adoptPartitionCount(redis, stores[0]!.keys, stores.length, (p) =>
    owedIn(redis, partitionPrefix(config.plainPrefix, config.redis, p)),
  );
  if (dropping) throw new Error(dropping);
  // runs of an earlier build's layout are not served (lua/common.lua checkLayout)
  const legacy = (await Promise.all(stores.map((s) => s.indexes.liveRunsOfOtherLayoutsAtStart()))).flat();
  if (legacy.length)
    throw new Error(
      `live runs stored in the layout of a build before 2026-12-03 (${legacy.join(', ')}${legacy.length >= 10 ? ', …' : ''}): this build serves layout ${RUN_LAYOUT} only. Let the earlier build finish or cancel them, then start this one (docs/OPERATIONS.md, Upgrading)`,
    );
  const partitions = new Partitions<ServicePartition>(
    stores.map((store, index) => {
      const p = partitionOf(store, new QueueSet(publisher, store.prefix), index);
      return { ...p, decisions: new DecisionService(store, p.scheduler, shared.catalog, shared.metrics) };
    }),
  );
  partitions.watchCount();
  return { partitions, served: served.map((i) => partitions.all[i]!) };
}

/** What a partition still owes (adoptPartitionCount): its live runs and outbox entries, and its webhook deliveries. */
async function owedIn(redis: Redis, prefix: string): Promise<number> {
  const webhooks = new Queue(QUEUES.webhooks, { connection: redis, prefix });
  try {
    const jobs = await webhooks.getJobCounts('waiting', 'delayed', 'active', 'prioritized');
    return (await new RunStore(redis, prefix).indexes.liveCount()) + Object.values(jobs).reduce((a, b) => a + b, 0);
  } finally {
    await webhooks.close();
  }
}
