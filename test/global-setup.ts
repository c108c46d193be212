import { spawnSync } from 'node:child_process';
import { resolveTestRedis, type OwnedRedis } from '../packages/testing/src/redis.js';
import { RedisClusterFixture } from '../packages/testing/src/redis-topologies.js';

let server: OwnedRedis | null = null;
let cluster: RedisClusterFixture | null = null;

/**
 * One Redis for the whole run: REDIS_URL, else a redis-server of our own, else a container (tests use their own key
 * prefixes). With AGENTLOOP_TEST_CLUSTER=1 it is a Redis Cluster of our own instead (3 primaries, 3 replicas): its
 * seeds go in AGENTLOOP_TEST_CLUSTER_NODES and the e2e stacks start the product with REDIS_CLUSTER_NODES.
 */
export async function setup(): Promise<void> {
  if (process.env.AGENTLOOP_TEST_CLUSTER === '1') {
    try {
      cluster = await RedisClusterFixture.start();
    } catch (e) {
      throw new Error(
        'AGENTLOOP_TEST_CLUSTER=1: cannot start a Redis Cluster for the tests (6 redis-server --cluster-enabled nodes ' +
          `joined by redis-cli --cluster create; both must be on PATH): ${(e as Error).message}`,
      );
    }
    process.env.AGENTLOOP_TEST_CLUSTER_NODES = cluster.seeds;
    // what asks for "the test Redis" directly gets one node of the cluster (a key of another node's slot: MOVED)
    process.env.AGENTLOOP_TEST_REDIS_URL = `redis://${cluster.seeds.split(',')[0]}`;
    console.log(`cluster mode: the e2e stacks use the Redis Cluster at ${cluster.seeds}`);
  } else {
    const r = await resolveTestRedis();
    server = r.server;
    process.env.AGENTLOOP_TEST_REDIS_URL = r.url;
  }
  // one fuzz seed per run (fixed when given): properties and samples draw from it, and it is printed to replay a failure
  const given = Number(process.env.AGENTLOOP_FUZZ_SEED);
  const seed = Number.isSafeInteger(given) ? given : Math.floor(Math.random() * 2 ** 31);
  process.env.AGENTLOOP_FUZZ_SEED = String(seed);
  const replay = cluster
    ? `AGENTLOOP_TEST_CLUSTER=1 AGENTLOOP_FUZZ_SEED=${seed} pnpm exec vitest run --config vitest.cluster.config.ts <test file>`
    : `AGENTLOOP_FUZZ_SEED=${seed} ./scripts/test.sh <test file>`;
  console.log(`fuzz seed ${seed} (replay a failure: ${replay})`);
}

/** Up to 20 keys on the cluster (`redis-cli --scan` of each node, replicas too): what the tests left behind. */
function keysLeft(c: RedisClusterFixture): string[] {
  const keys = new Set<string>();
  for (const { host, port } of c.startupNodes) {
    const out = spawnSync('redis-cli', ['-h', host, '-p', String(port), '--scan'], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (out.status !== 0) throw new Error(`redis-cli --scan on ${host}:${port}: ${out.stderr || out.error?.message}`);
    for (const k of out.stdout.split('\n').filter(Boolean)) keys.add(k);
  }
  return [...keys].slice(0, 20);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (!cluster) return;
  // the stacks' cleanup removes every key a test wrote
  let left: string[];
  try {
    left = keysLeft(cluster);
  } finally {
    await cluster.stop();
  }
  if (left.length) throw new Error(`cluster mode: keys left on the cluster after the tests: ${left.join(', ')}`);
}
