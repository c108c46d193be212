import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * The cluster pass (`AGENTLOOP_TEST_CLUSTER=1 pnpm exec vitest run --config vitest.cluster.config.ts`, run by
 * scripts/test.sh after the normal pass): these e2e files again, unchanged, with the stacks' product on a Redis Cluster
 * of 3 primaries and 3 replicas (REDIS_CLUSTER_NODES; test/global-setup.ts starts it).
 */
export const clusterE2eFiles = ['cluster-stacks', 'admin-board'];

/** The e2e files the cluster pass leaves out, each with why. */
export const clusterE2eExcluded: Record<string, string> = {};

export default defineConfig({
  test: { ...base.test, include: clusterE2eFiles.map((f) => `packages/e2e/src/e2e/${f}.test.ts`) },
});
