import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';
import { clusterE2eFiles } from './test/cluster-pass.js';

/**
 * The cluster pass (`AGENTLOOP_TEST_CLUSTER=1 pnpm exec vitest run --config vitest.cluster.config.ts`, run by
 * scripts/test.sh after the normal pass): the e2e files of test/cluster-pass.ts again, unchanged, with the stacks'
 * product on a Redis Cluster of 3 primaries and 3 replicas (REDIS_CLUSTER_NODES; test/global-setup.ts starts it).
 */
export default defineConfig({
  test: { ...base.test, include: clusterE2eFiles.map((f) => `packages/e2e/src/e2e/${f}.test.ts`) },
});
