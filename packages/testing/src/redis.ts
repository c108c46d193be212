import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';

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
  const r = new Redis(url, { lazyConnect: true, connectTimeout: timeoutMs, maxRetriesPerRequest: 0, retryStrategy: () => null });
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
    const args = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--dir', this.dir, '--appendonly', opts.appendOnly ? 'yes' : 'no'];
    this.proc = spawn('redis-server', args, { stdio: 'ignore' });
    const spawnError = new Promise<never>((_, reject) => this.proc!.once('error', (e) => reject(new Error(`cannot start redis-server: ${e.message}`))));
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

/**
 * The Redis the tests use: REDIS_URL when set; otherwise a redis-server of our own on a free port; otherwise a
 * clear error saying how to provide one. (testcontainers would be the next fallback on machines with Docker.)
 */
export async function resolveTestRedis(): Promise<{ url: string; server: RedisServer | null }> {
  if (process.env.REDIS_URL) {
    if (!(await redisReachable(process.env.REDIS_URL))) throw new Error(`REDIS_URL=${process.env.REDIS_URL} does not answer PING`);
    return { url: process.env.REDIS_URL, server: null };
  }
  try {
    const server = await RedisServer.start();
    return { url: server.url, server };
  } catch (e) {
    throw new Error(
      `No Redis for the tests: REDIS_URL is not set and redis-server could not be started (${(e as Error).message}). ` +
        'Install redis-server (apt-get install redis-server) or set REDIS_URL=redis://host:port.',
    );
  }
}

/** A fresh key prefix for one test: nothing it writes collides with another test. */
export const testPrefix = (name = 't') => `test-${name}-${randomBytes(4).toString('hex')}`;

/** Delete every key under a prefix. */
export async function cleanupPrefix(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [`${prefix}:*`, `{${prefix}}:*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  }
}

/** The Redis URL the test run's global setup resolved. */
export function testRedisUrl(): string {
  const url = process.env.AGENTLOOP_TEST_REDIS_URL ?? process.env.REDIS_URL;
  if (!url) throw new Error('no test Redis: run the tests through vitest (its global setup provides one) or set REDIS_URL');
  return url;
}
