import type { Config, Logger, Metrics, RunStore } from '@agentloop/runtime';
import type { IsolationLimits, ToolRunnerOptions } from '@agentloop/tool-runner';
import type { Redis } from 'ioredis';

/** What the roles started in one process share: its configuration and environment, its connections, the store and the metrics. */
export interface ProcessParts {
  config: Config;
  env: Record<string, string | undefined>;
  logger: Logger;
  redis: Redis;
  subscriber: Redis;
  store: RunStore;
  metrics: Metrics;
  isolation: IsolationLimits;
  /** Behind Sentinel: a retry:"never" call starts only once a replica has its start. */
  replicaAck: ToolRunnerOptions['replicaAck'];
}
