import type { Config, Logger, Metrics, Partitions } from '@agentloop/runtime';
import type { ServicePartition } from '@agentloop/orchestrator';
import type { IsolationLimits, ToolRunnerOptions } from '@agentloop/tool-runner';
import type { Redis } from 'ioredis';

/** What the roles started in one process share: its configuration and environment, its connections, the partitions and the metrics. */
export interface ProcessParts {
  config: Config;
  env: Record<string, string | undefined>;
  logger: Logger;
  redis: Redis;
  subscriber: Redis;
  /** Every partition of the deployment (a run's steps route to the one that holds it). */
  partitions: Partitions<ServicePartition>;
  /** The partitions whose runs this process's workers serve (--partitions; every one by default). */
  served: readonly ServicePartition[];
  metrics: Metrics;
  isolation: IsolationLimits;
  /** Behind Sentinel: a retry:"never" call starts only once a replica has its start. */
  replicaAck: ToolRunnerOptions['replicaAck'];
}
