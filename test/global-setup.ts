import { resolveTestRedis, type OwnedRedis } from '../packages/testing/src/redis.js';

let server: OwnedRedis | null = null;

/** One Redis for the whole run: REDIS_URL, else a redis-server of our own, else a container (tests use their own key prefixes). */
export async function setup(): Promise<void> {
  const r = await resolveTestRedis();
  server = r.server;
  process.env.AGENTLOOP_TEST_REDIS_URL = r.url;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
