import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { freePort, redisReachable } from './redis.js';

/** One redis-server process (a cluster node, a primary, a replica or a sentinel) in a directory of its own. */
export class RedisProcess {
  private proc: ChildProcess | null = null;
  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  /** A redis-server on a free port; one that exits before it answers (its port, or a cluster node's bus port + 10000,
   * taken meanwhile) is started again on another, up to 5 times. */
  static async start(args: string[], opts: { sentinelConfig?: string } = {}): Promise<RedisProcess> {
    for (let attempt = 1; ; attempt++) {
      const p = new RedisProcess(await freePort(), fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-redis-topo-')));
      if (await p.spawn(args, opts)) return p;
      fs.rmSync(p.dir, { recursive: true, force: true });
      if (attempt === 5) throw new Error(`redis-server exited before it answered, on 5 ports (the last ${p.port})`);
    }
  }

  private async spawn(args: string[], opts: { sentinelConfig?: string }): Promise<boolean> {
    const common = ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'];
    if (opts.sentinelConfig !== undefined) {
      const conf = path.join(this.dir, 'sentinel.conf');
      fs.writeFileSync(conf, opts.sentinelConfig); // a sentinel rewrites its config file: it must be its own
      this.proc = spawn(
        'redis-server',
        [conf, '--sentinel', '--port', String(this.port), '--bind', '127.0.0.1', '--dir', this.dir],
        { stdio: 'ignore' },
      );
    } else this.proc = spawn('redis-server', [...common, '--dir', this.dir, ...args], { stdio: 'ignore' });
    const spawnError = new Promise<never>((_, reject) =>
      this.proc!.once('error', (e) => reject(new Error(`cannot start redis-server: ${e.message}`))),
    );
    for (
      const t0 = Date.now();
      !(await Promise.race([redisReachable(this.url, 300), spawnError]));
      await new Promise((r) => setTimeout(r, 50))
    ) {
      if (!this.running) return false;
      if (Date.now() - t0 > 10_000) throw new Error(`redis-server on port ${this.port} did not answer within 10 s`);
    }
    return true;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends a signal without waiting (SIGSTOP / SIGCONT: a replica that stops acknowledging, then comes back). */
  signal(signal: NodeJS.Signals): void {
    this.proc?.kill(signal);
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.proc;
    if (p && p.exitCode === null && p.signalCode === null)
      await new Promise<void>((resolve) => {
        p.once('exit', () => resolve());
        p.kill(signal);
      });
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
  rethrow = false,
): Promise<void> {
  for (
    const t0 = Date.now();
    !(await check().catch((e: unknown) => (rethrow ? Promise.reject(e) : false)));
    await new Promise((r) => setTimeout(r, 100))
  )
    if (Date.now() - t0 > timeoutMs) throw new Error(`${what}: not within ${timeoutMs} ms`);
}

async function ask<T>(url: string, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
  r.on('error', () => undefined);
  try {
    await r.connect();
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/** A primary and its replica (no sentinels): for what depends on replication alone (WAIT). */
export class RedisReplicatedPair {
  private constructor(
    readonly primary: RedisProcess,
    readonly replica: RedisProcess,
  ) {}

  static async start(): Promise<RedisReplicatedPair> {
    const primary = await RedisProcess.start([]);
    try {
      const replica = await RedisProcess.start(['--replicaof', '127.0.0.1', String(primary.port)]);
      await waitFor('replica in sync', () =>
        ask(primary.url, async (r) => /^slave0:.*state=online/m.test(await r.info('replication'))),
      );
      return new RedisReplicatedPair(primary, replica);
    } catch (e) {
      await primary.stop();
      throw e;
    }
  }

  async stop(): Promise<void> {
    this.replica.signal('SIGCONT');
    await Promise.all([this.replica.stop(), this.primary.stop()]);
  }
}

/**
 * A real Redis Cluster on this machine: 3 primaries and 3 replicas (`redis-server --cluster-enabled yes` on free
 * ports, joined by `redis-cli --cluster create … --cluster-replicas 1`), stopped and removed by `stop()`.
 */
export class RedisClusterFixture {
  private constructor(readonly nodes: RedisProcess[]) {}

  /** `127.0.0.1:port,…`: REDIS_CLUSTER_NODES for the product. */
  get seeds(): string {
    return this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',');
  }

  get startupNodes(): Array<{ host: string; port: number }> {
    return this.nodes.map((n) => ({ host: '127.0.0.1', port: n.port }));
  }

  static async start(): Promise<RedisClusterFixture> {
    const nodes: RedisProcess[] = [];
    try {
      for (let i = 0; i < 6; i++)
        nodes.push(
          await RedisProcess.start([
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            'nodes.conf',
            '--cluster-node-timeout',
            '2000',
          ]),
        );
      const create = spawn(
        'redis-cli',
        ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '1', '--cluster-yes'],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      create.stdout!.on('data', (d: Buffer) => (out += d));
      create.stderr!.on('data', (d: Buffer) => (out += d));
      const code = await new Promise<number | null>((r) => create.once('exit', r));
      if (code !== 0) throw new Error(`redis-cli --cluster create exited ${code}: ${out.slice(-2000)}`);
      // every node agrees the cluster is whole (all 16,384 slots served, each primary with its replica) before a
      // client is given it
      const whole = (r: Redis) => async () => {
        const lines = String(await r.call('CLUSTER', 'NODES'))
          .split('\n')
          .filter(Boolean);
        return (
          /cluster_state:ok/.test(String(await r.call('CLUSTER', 'INFO'))) &&
          lines.filter((l) => /\bslave\b/.test(l)).length === 3
        );
      };
      for (const n of nodes) await waitFor(`cluster state on ${n.port}`, () => ask(n.url, (r) => whole(r)()));
      return new RedisClusterFixture(nodes);
    } catch (e) {
      await Promise.all(nodes.map((n) => n.stop()));
      throw e;
    }
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => n.stop()));
  }
}

/**
 * A Sentinel group on this machine: one primary, one replica, three sentinels watching them as `name` (quorum 2,
 * failing over after 1 s of silence), stopped and removed by `stop()`.
 */
export class RedisSentinelFixture {
  private constructor(
    readonly name: string,
    readonly servers: RedisProcess[],
    readonly sentinels: RedisProcess[],
  ) {}

  /** `127.0.0.1:port,…`: REDIS_SENTINELS for the product. */
  get seeds(): string {
    return this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
  }

  static async start(name = 'agentloop-main'): Promise<RedisSentinelFixture> {
    const started: RedisProcess[] = [];
    try {
      const primary = await RedisProcess.start([]);
      started.push(primary);
      const replica = await RedisProcess.start(['--replicaof', '127.0.0.1', String(primary.port)]);
      started.push(replica);
      await waitFor('replica in sync', () =>
        ask(primary.url, async (r) => /^slave0:.*state=online/m.test(await r.info('replication'))),
      );
      const conf = [
        `sentinel monitor ${name} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${name} 1000`,
        `sentinel failover-timeout ${name} 5000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n');
      const sentinels: RedisProcess[] = [];
      for (let i = 0; i < 3; i++) sentinels.push(await RedisProcess.start([], { sentinelConfig: conf }));
      started.push(...sentinels);
      // every sentinel knows the replica and the other two sentinels: a failover can be agreed on
      for (const s of sentinels)
        await waitFor(`sentinel ${s.port} sees the group`, () =>
          ask(s.url, async (r) => {
            const [master] = (await r.call('SENTINEL', 'MASTERS')) as string[][];
            const field = (k: string) => master![master!.indexOf(k) + 1];
            return field('num-slaves') === '1' && field('num-other-sentinels') === '2';
          }),
        );
      return new RedisSentinelFixture(name, [primary, replica], sentinels);
    } catch (e) {
      await Promise.all(started.map((p) => p.stop()));
      throw e;
    }
  }

  /** The address the sentinels give for the primary now. */
  async primaryPort(): Promise<number> {
    const [, port] = (await ask(this.sentinels[0]!.url, (r) =>
      r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.name),
    )) as [string, string];
    return Number(port);
  }

  /**
   * `SENTINEL FAILOVER`, resolved once the sentinels name the other server as the primary and it accepts writes. The
   * old primary takes writes until the sentinels demote it: for that moment there are two primaries, and what it took
   * then is lost (docs/OPERATIONS.md, "Redis: Sentinel and Cluster").
   */
  async failover(): Promise<number> {
    const before = await this.primaryPort();
    // a sentinel refuses while it has not yet judged the replica fit (NOGOODSLAVE: e.g. its last ping is too old on
    // a loaded machine) or while an earlier failover runs (INPROG): asked again until it starts one
    await waitFor(
      'SENTINEL FAILOVER accepted',
      () =>
        ask(this.sentinels[0]!.url, (r) => r.call('SENTINEL', 'FAILOVER', this.name)).then(
          () => true,
          (e: Error) => {
            if (/NOGOODSLAVE|INPROG/.test(e.message)) return false;
            throw e;
          },
        ),
      30_000,
      true,
    );
    await waitFor('the failover', async () => (await this.primaryPort()) !== before);
    const after = await this.primaryPort();
    await waitFor('the new primary takes writes', () =>
      ask(`redis://127.0.0.1:${after}`, async (r) => /role:master/.test(await r.info('replication'))),
    );
    return after;
  }

  /**
   * Kills the primary (SIGKILL), resolved once the sentinels have promoted the replica and it accepts writes. Unlike
   * `failover()`, no moment has two primaries: what the dead one had not replicated is lost as a whole tail.
   */
  async killPrimary(): Promise<number> {
    const before = await this.primaryPort();
    await this.servers.find((p) => p.port === before)!.stop('SIGKILL');
    await waitFor('the failover', async () => (await this.primaryPort()) !== before);
    const after = await this.primaryPort();
    await waitFor('the new primary takes writes', () =>
      ask(`redis://127.0.0.1:${after}`, async (r) => /role:master/.test(await r.info('replication'))),
    );
    return after;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.sentinels, ...this.servers].map((p) => p.stop()));
  }
}
