/**
 * The cluster pass (vitest.cluster.config.ts; scripts/test.sh runs it after the normal pass): which e2e files of
 * packages/e2e/src/e2e run again, unchanged, with the stacks' product on a Redis Cluster (AGENTLOOP_TEST_CLUSTER=1),
 * and why each other one does not. Every e2e file is in exactly one of the two (cluster-pass.test.ts).
 */
export const clusterE2eFiles = [
  'cluster-stacks', // the cluster mode's own check: keys in the prefix's slot, none left after stop
  'admin-board',
  'cli-decisions',
  'cli-follow-prompt',
  'cli-follow-reconnect',
  'cli-runs',
  'client-browser-bundle',
  'client-events-restart',
  'console',
  'context-pressure',
  'cors',
  'crash-recovery',
  'dashboards',
  'distributed-loop',
  'events-spec',
  'graceful-shutdown',
  'hostile-model-output',
  'http-edges',
  'isolated-tools',
  'openapi-contract',
  'openapi-tools',
  'partitions', // three partitions: three slots, so on a cluster they can live on three shards
  'provider-intake',
  'provider-limits',
  'react',
  'responses',
  'stall-recovery',
  'structured-output',
  'webhooks-processes',
  'model-output-fuzz', // uses s.prefix only as a random marker in its prompts
  // their own reads and writes of keys and queues go through the stack's keyPrefix ({prefix} on a cluster)
  'api-fuzz',
  'credential-canary',
  'gemini',
  'mcp-servers',
  'stream-limits',
  'tenant-limits',
  'approvals',
  'local-tools',
  'threads',
  'fair-scheduling',
  'duplicate-delivery',
  'client',
  'intake-exactly-once',
  'iteration-ownership',
  'loop-control',
  'results-queue',
  'retention',
  'sse-hostile',
  'stuck-runs',
  'tracing',
  'webhooks',
  'worker-plumbing',
];

/** The e2e files the cluster pass leaves out, each with why. */
export const clusterE2eExcluded: Record<string, string> = {
  // their own Redis or topology
  'redis-cluster': 'starts a Redis Cluster of its own (the product on a cluster, every key in the prefix slot)',
  sentinel: 'starts a Sentinel group of its own and fails it over',
  connectivity: 'starts, stops and restarts a redis-server of its own (Redis unreachable, lost, back)',
  'listing-cost': 'a redis-server of its own, whose byte counters it reads',
  'parking-cost': 'a redis-server of its own, whose memory and counters it reads',
  'deploy-bundle':
    'starts the deployed bundle itself on testRedisUrl() and reads and cleans its keys by the plain prefix',
  startup: 'starts `agentloop serve` itself on testRedisUrl() and reads its keys by the plain prefix',
  // no Redis at all: a cluster changes nothing
  'client-docs': 'no Redis (the client docs compile)',
  'docs-links': 'no Redis (links of the docs)',
  'deploy-manifests': 'no Redis (manifests against their schemas)',
};
