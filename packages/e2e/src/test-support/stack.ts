import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import {
  CLI_MAIN,
  TEST_TOOLS_MODULE,
  cleanupPrefix,
  freePort,
  startMockLlm,
  testClusterNodes,
  testRedisUrl,
  type MockLlmServer,
  type Script,
} from '@agentloop/testing';
import { serve, type Role, type RunningProcess } from '@agentloop/cli/serve';
import { ApiClient } from './api-client.js';
import type { Planner } from '@agentloop/orchestrator';

export interface StackOptions {
  script?: Script;
  /** A Redis other than the test run's (e.g. one whose command counters the test reads). */
  redisUrl?: string;
  /** The test's own connection, where `redisUrl` will not stay the primary (Sentinel: follow the failover). */
  testRedis?: RedisOptions;
  /** Extra environment of the product's processes (a function: derived from the mock model server's URL). */
  env?: Record<string, string> | ((mock: MockLlmServer) => Record<string, string>);
  contextWindows?: Record<string, number>;
  /** Tool pools the in-process tool-runner serves [every pool of its registry]. */
  pools?: string[];
  /** The orchestrator's deciders (a recorder of histories wraps them). */
  planner?: Planner;
}

/** Environment shared by every process of one test stack (`clusterNodes`: the product on that Redis Cluster). */
function stackEnv(
  prefix: string,
  redisUrl: string,
  clusterNodes: string | null,
  mock: MockLlmServer,
  effectLog: string,
  extraOpt: StackOptions['env'] = {},
): Record<string, string> {
  const extra = typeof extraOpt === 'function' ? extraOpt(mock) : extraOpt;
  return {
    REDIS_URL: redisUrl,
    ...(clusterNodes ? { REDIS_CLUSTER_NODES: clusterNodes } : {}),
    AGENTLOOP_PREFIX: prefix,
    AGENTLOOP_PORT: '0',
    AGENTLOOP_METRICS_PORT: '0',
    AGENTLOOP_HOST: '127.0.0.1',
    AGENTLOOP_API_KEYS: 'key-a=tenant-a,key-b=tenant-b',
    AGENTLOOP_TOOL_MODULES: TEST_TOOLS_MODULE,
    AGENTLOOP_TEST_EFFECT_LOG: effectLog,
    AGENTLOOP_LLM_RETRY_BASE_MS: '20',
    OPENAI_API_KEY: 'sk-test',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    DEEPSEEK_API_KEY: 'sk-test-deepseek',
    DEEPSEEK_BASE_URL: `${mock.url}/deepseek/v1`,
    GEMINI_API_KEY: 'test-gemini',
    GEMINI_BASE_URL: mock.url,
    LOG_LEVEL: process.env.AGENTLOOP_TEST_LOG_LEVEL ?? 'warn',
    ...extra,
  };
}

abstract class BaseStack {
  readonly prefix = `t-${randomBytes(4).toString('hex')}`;
  readonly effectLog = path.join(os.tmpdir(), `agentloop-effects-${this.prefix}.jsonl`);
  readonly redisUrl: string;
  /**
   * The run's Redis Cluster in cluster mode (AGENTLOOP_TEST_CLUSTER=1), for a stack on the run's Redis: the product
   * gets REDIS_CLUSTER_NODES (and hash-tags the prefix: its keys are `{prefix}:…`, all in one slot) and `redis` is a
   * `Cluster` (typed as `Redis`: commands, scripts and `cleanupPrefix` work on it). A stack given its own Redis
   * (`redisUrl`, `testRedis`) keeps it.
   */
  readonly clusterNodes: string | null;
  readonly redis: Redis;

  /** What the product's keys and queues start with: the prefix, hash-tagged on a cluster (`{prefix}`, as it does). */
  get keyPrefix(): string {
    return this.clusterNodes ? `{${this.prefix}}` : this.prefix;
  }

  constructor(redisUrl?: string, testRedis?: RedisOptions) {
    this.clusterNodes = redisUrl === undefined && !testRedis ? testClusterNodes() : null;
    this.redisUrl = redisUrl ?? testRedisUrl();
    this.redis = this.clusterNodes
      ? (new Cluster(
          this.clusterNodes.split(',').map((hp) => ({ host: hp.split(':')[0]!, port: Number(hp.split(':')[1]) })),
        ) as unknown as Redis)
      : testRedis
        ? new Redis(testRedis)
        : new Redis(this.redisUrl);
  }
  mock!: MockLlmServer;
  a!: ApiClient;
  b!: ApiClient;
  anon!: ApiClient;

  protected async startMock(opts: StackOptions): Promise<void> {
    fs.writeFileSync(this.effectLog, '');
    this.mock = await startMockLlm({ script: opts.script, contextWindows: opts.contextWindows });
  }

  protected clients(baseUrl: string): void {
    this.a = new ApiClient(baseUrl, 'key-a');
    this.b = new ApiClient(baseUrl, 'key-b');
    this.anon = new ApiClient(baseUrl, null);
  }

  effects(): Array<Record<string, any>> {
    return fs
      .readFileSync(this.effectLog, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  }

  protected async cleanup(): Promise<void> {
    await this.mock?.close();
    await cleanupPrefix(this.redis, this.prefix).catch(() => {});
    this.redis.disconnect();
    fs.rmSync(this.effectLog, { force: true });
  }
}

/** Every role in this test process (fast; for loop-semantics tests). */
export class InProcessStack extends BaseStack {
  proc!: RunningProcess;

  static async start(opts: StackOptions = {}): Promise<InProcessStack> {
    const s = new InProcessStack(opts.redisUrl, opts.testRedis);
    await s.startMock(opts);
    process.env.AGENTLOOP_TEST_EFFECT_LOG = s.effectLog; // tool modules read the process environment
    s.proc = await serve({
      roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
      ...(opts.pools ? { pools: opts.pools } : {}),
      ...(opts.planner ? { planner: opts.planner } : {}),
      env: { ...process.env, ...stackEnv(s.prefix, s.redisUrl, s.clusterNodes, s.mock, s.effectLog, opts.env) },
    });
    s.clients(s.proc.apiUrl!);
    return s;
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
    await this.cleanup();
  }
}

export interface RoleProcess {
  name: string;
  child: ChildProcess;
  output: string[];
  exited: Promise<number | null>;
}

/** Each role as its own OS process (`agentloop serve --role X`), for end-to-end and crash tests. */
export class ProcessStack extends BaseStack {
  readonly procs = new Map<string, RoleProcess>();
  private env!: Record<string, string>;

  static async start(roles: string[], opts: StackOptions = {}): Promise<ProcessStack> {
    const s = new ProcessStack(opts.redisUrl, opts.testRedis);
    await s.startMock(opts);
    s.env = {
      AGENTLOOP_LOCK_MS: '3000',
      ...stackEnv(s.prefix, s.redisUrl, s.clusterNodes, s.mock, s.effectLog, opts.env),
    };
    for (const r of roles) await s.spawn(r);
    return s;
  }

  /**
   * Starts a process for `name` (`role`, `role#n`, or `all` for every role in one process); resolves once it printed
   * its ready line. A restarted api takes the first api's port unless `extraEnv` says otherwise. `args`: more of
   * `serve`'s arguments (`--pools crm`).
   */
  async spawn(name: string, extraEnv: Record<string, string> = {}, args: string[] = []): Promise<RoleProcess> {
    const role = name.split('#')[0] as Role | 'all';
    const env = { ...process.env, ...this.env };
    if ((role === 'api' || role === 'all') && this.a) env.AGENTLOOP_PORT = new URL(this.a.baseUrl).port;
    Object.assign(env, extraEnv);
    const child = spawn(process.execPath, [CLI_MAIN, 'serve', ...(role === 'all' ? [] : ['--role', role]), ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const output: string[] = [];
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    const rp: RoleProcess = { name, child, output, exited };
    this.procs.set(name, rp);
    await new Promise<void>((resolve, reject) => {
      const onData = (d: Buffer) => {
        for (const line of d.toString().split('\n')) {
          if (!line) continue;
          output.push(line);
          const m = /agentloop api listening on (\S+)/.exec(line);
          if (m) this.clients(m[1]!);
          if (line.startsWith('agentloop ready')) resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', (d: Buffer) => output.push(...d.toString().split('\n').filter(Boolean)));
      void exited.then((code) =>
        reject(new Error(`${name} exited (${code}) before it was ready:\n${output.slice(-20).join('\n')}`)),
      );
    });
    return rp;
  }

  async kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const p = this.procs.get(name);
    if (!p) return;
    p.child.kill(signal);
    await p.exited;
    this.procs.delete(name);
  }

  async stop(): Promise<void> {
    await Promise.all([...this.procs.keys()].map((n) => this.kill(n, 'SIGTERM')));
    await this.cleanup();
  }
}

export { freePort };
