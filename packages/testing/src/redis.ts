import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

export async function redisReachable(url: string, timeoutMs = 1500): Promise<boolean> {
  const r = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on('error', () => {});
  try {
    await r.connect();
    return (await r.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    r.disconnect();
  }
}

/** A redis-server of our own on a free port (so restart tests can stop and start it). */
export class RedisServer {
  private proc: ChildProcess | null = null;
  readonly dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-redis-'));
  constructor(readonly port: number) {}

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(opts: { appendOnly?: boolean } = {}): Promise<RedisServer> {
    const s = new RedisServer(await freePort());
    await s.start(opts);
    return s;
  }

  async start(opts: { appendOnly?: boolean } = {}): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--dir',
      this.dir,
      '--appendonly',
      opts.appendOnly ? 'yes' : 'no',
    ];
    this.proc = spawn('redis-server', args, { stdio: 'ignore' });
    const spawnError = new Promise<never>((_, reject) =>
      this.proc!.once('error', (e) => reject(new Error(`cannot start redis-server: ${e.message}`))),
    );
    const t0 = Date.now();
    while (!(await Promise.race([redisReachable(this.url, 300), spawnError]))) {
      if (Date.now() - t0 > 10_000) throw new Error(`redis-server on port ${this.port} did not answer within 10 s`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      p.once('exit', () => resolve());
      p.kill(signal);
    });
    this.proc = null;
  }
}

export type TestRedisSource = 'env' | 'redis-server' | 'container' | 'none';

export interface TestRedisProbes {
  redisServerInstalled: () => boolean;
  dockerEngineAnswers: () => boolean;
}

/** Probes of this machine: `redis-server --version` runs; a Docker engine answers `docker info`. */
export const machineProbes: TestRedisProbes = {
  redisServerInstalled: () => spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0,
  dockerEngineAnswers: () => spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 10_000 }).status === 0,
};

/**
 * Where the tests get their Redis (DESIGN: testcontainers is the fallback): REDIS_URL when set; else a redis-server
 * of our own; else, where a Docker engine answers, a Redis container; else none (a clear error).
 */
export function chooseTestRedis(
  env: Record<string, string | undefined>,
  probes: TestRedisProbes = machineProbes,
): TestRedisSource {
  if (env.REDIS_URL) return 'env';
  if (probes.redisServerInstalled()) return 'redis-server';
  if (probes.dockerEngineAnswers()) return 'container';
  return 'none';
}

/** A Redis the run owns: a redis-server process or a container, stopped at teardown. */
export interface OwnedRedis {
  url: string;
  stop(): Promise<void>;
}

/** The Redis the tests use, chosen by chooseTestRedis. */
export async function resolveTestRedis(
  probes: TestRedisProbes = machineProbes,
): Promise<{ url: string; server: OwnedRedis | null }> {
  const source = chooseTestRedis(process.env, probes);
  switch (source) {
    case 'env': {
      const url = process.env.REDIS_URL!;
      if (!(await redisReachable(url))) throw new Error(`REDIS_URL=${url} does not answer PING`);
      return { url, server: null };
    }
    case 'redis-server': {
      const server = await RedisServer.start();
      return { url: server.url, server };
    }
    case 'container': {
      const { GenericContainer, Wait } = await import('testcontainers');
      const container = await new GenericContainer('redis:7-alpine')
        .withExposedPorts(6379)
        .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
        .start();
      return {
        url: `redis://${container.getHost()}:${container.getMappedPort(6379)}`,
        server: { url: '', stop: async () => void (await container.stop()) },
      };
    }
    case 'none':
      throw new Error(
        'No Redis for the tests: REDIS_URL is not set, redis-server is not installed and no Docker engine answers. ' +
          'Install redis-server (apt-get install redis-server), set REDIS_URL=redis://host:port, or start Docker.',
      );
  }
}

/** A fresh key prefix for one test: nothing it writes collides with another test. */
export const testPrefix = (name = 't') => `test-${name}-${randomBytes(4).toString('hex')}`;

/**
 * Delete every key under a prefix, plain or hash-tagged (`{prefix}:…`, as the product names its keys on a Redis
 * Cluster). On a `Cluster` connection each primary is scanned (SCAN sees one node's keys) and each key is unlinked on
 * its own (keys of several slots cannot go in one command).
 */
export async function cleanupPrefix(redis: Redis | Cluster, prefix: string): Promise<void> {
  if (redis instanceof Cluster) await redis.ping(); // connected, so it knows the primaries
  const nodes: Redis[] = redis instanceof Cluster ? redis.nodes('master') : [redis];
  for (const node of nodes)
    // (partition p ≥ 1 of AGENTLOOP_PARTITIONS lives under `<prefix>-<p>`)
    for (const pattern of [`${prefix}:*`, `{${prefix}}:*`, `${prefix}-[1-9]*:*`, `{${prefix}-[1-9]*}:*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
        cursor = next;
        if (!keys.length) continue;
        if (redis instanceof Cluster) await Promise.all(keys.map((k) => node.unlink(k)));
        else await node.unlink(...keys);
      } while (cursor !== '0');
    }
}

/**
 * The seed nodes (`host:port,…`) of the Redis Cluster the test run's global setup started, when the run is in cluster
 * mode (AGENTLOOP_TEST_CLUSTER=1: the e2e stacks then start the product with REDIS_CLUSTER_NODES), else null.
 */
export function testClusterNodes(): string | null {
  if (process.env.AGENTLOOP_TEST_CLUSTER !== '1') return null;
  const nodes = process.env.AGENTLOOP_TEST_CLUSTER_NODES;
  if (!nodes)
    throw new Error(
      'AGENTLOOP_TEST_CLUSTER=1 but no cluster: run the tests through vitest (its global setup starts one) or set ' +
        'AGENTLOOP_TEST_CLUSTER_NODES=host:port,…',
    );
  return nodes;
}

/** The Redis URL the test run's global setup resolved. */
export function testRedisUrl(): string {
  const url = process.env.AGENTLOOP_TEST_REDIS_URL ?? process.env.REDIS_URL;
  if (!url)
    throw new Error('no test Redis: run the tests through vitest (its global setup provides one) or set REDIS_URL');
  return url;
}
