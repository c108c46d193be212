import { Redis } from 'ioredis';
import { RedisClusterFixture } from '@agentloop/testing';
import { lanes } from './loop-window.js';
import { ProductLoop, type LoopEnv } from './product-loop.js';

/** One primary of the bench's cluster: its port and the slot ranges it serves. */
interface Shard {
  port: number;
  redis: Redis;
  ranges: Array<[number, number]>;
}

/** What a shard did over a measured window. */
export interface ShardLoad {
  port: number;
  /** Its CPU (INFO cpu: user + system, every thread). */
  cpuMs: number;
  commands: number;
}

export interface PartitionFigure {
  partitions: number;
  iterations: number;
  seconds: number;
  /** CPU of the product (every role in this bench process). */
  productCpuMs: number;
  shards: ShardLoad[];
}

async function shardsOf(cluster: RedisClusterFixture): Promise<Shard[]> {
  const any = new Redis(cluster.nodes[0]!.port, '127.0.0.1');
  const slots = (await any.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number, ...unknown[]]]>;
  any.disconnect();
  const byPort = new Map<number, Shard>();
  for (const [from, to, [, port]] of slots) {
    const shard = byPort.get(port) ?? { port, redis: new Redis(port, '127.0.0.1'), ranges: [] };
    shard.ranges.push([from, to]);
    byPort.set(port, shard);
  }
  return [...byPort.values()];
}

/**
 * A prefix whose `count` partitions (`{name}`, `{name-1}`, …) hash to slots of `count` different shards: a
 * deployment moves its partitions' slots there with `redis-cli --cluster reshard`; the bench finds such a name.
 */
async function spreadPrefix(shards: Shard[], count: number): Promise<string> {
  const owner = (slot: number) => shards.findIndex((s) => s.ranges.some(([a, b]) => slot >= a && slot <= b));
  for (let i = 0; ; i++) {
    const name = `bench-part${i}`;
    const tags = Array.from({ length: count }, (_, p) => `{${p === 0 ? name : `${name}-${p}`}}:x`);
    const slots = await Promise.all(tags.map((t) => shards[0]!.redis.call('CLUSTER', 'KEYSLOT', t) as Promise<number>));
    if (new Set(slots.map(owner)).size === count) return name;
  }
}

async function shardCounters(shards: Shard[]): Promise<Array<{ cpuMs: number; commands: number }>> {
  return Promise.all(
    shards.map(async (s) => {
      const info = await s.redis.info();
      const num = (k: string) => Number(new RegExp(`^${k}:([\\d.]+)`, 'm').exec(info)?.[1] ?? 0);
      return {
        cpuMs: (num('used_cpu_user') + num('used_cpu_sys')) * 1000,
        commands: num('total_commands_processed'),
      };
    }),
  );
}

/**
 * SPEC §1 partitions on a real Redis Cluster (3 primaries, 3 replicas, this machine): the core workload (runs of
 * `iterations` model calls, a no-op pooled tool between them, zero-latency mock model) with every role in this
 * process, on 1 and on 3 partitions whose slots are on 3 different shards. Each count runs `rounds` times,
 * alternating. Figures: iterations/s, the product's CPU, and each shard's CPU and commands.
 */
export async function partitionsBench(
  ctx: LoopEnv,
  o: { runs: number; parallel: number; rounds: number; counts: number[] },
): Promise<PartitionFigure[]> {
  const cluster = await RedisClusterFixture.start();
  const shards = await shardsOf(cluster);
  const out: PartitionFigure[] = [];
  try {
    const prefix = await spreadPrefix(shards, Math.max(...o.counts));
    for (let round = 0; round < o.rounds; round++)
      for (const count of o.counts) {
        await Promise.all(shards.map((s) => s.redis.flushall()));
        const loop = new ProductLoop(ctx, prefix, 'openai', {
          REDIS_CLUSTER_NODES: cluster.seeds,
          AGENTLOOP_PARTITIONS: String(count),
          // the same slots in all: concurrency is per partition
          AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(Math.ceil(ctx.concurrency.orchestrator / count)),
          AGENTLOOP_TOOL_CONCURRENCY: String(Math.ceil(ctx.concurrency.tools / count)),
        });
        await loop.start();
        try {
          await lanes(loop, Math.min(100, o.runs), o.parallel, `partitions ${count} warm-up`);
          const before = await shardCounters(shards);
          const iterations0 = loop.iterations;
          const cpu0 = process.cpuUsage();
          const t0 = performance.now();
          await lanes(loop, o.runs, o.parallel, `partitions ${count}`);
          const seconds = (performance.now() - t0) / 1000;
          const cpu = process.cpuUsage(cpu0);
          const after = await shardCounters(shards);
          out.push({
            partitions: count,
            iterations: loop.iterations - iterations0,
            seconds,
            productCpuMs: (cpu.user + cpu.system) / 1000,
            shards: shards.map((s, i) => ({
              port: s.port,
              cpuMs: after[i]!.cpuMs - before[i]!.cpuMs,
              commands: after[i]!.commands - before[i]!.commands,
            })),
          });
        } finally {
          await loop.close();
        }
      }
  } finally {
    for (const s of shards) s.redis.disconnect();
    await cluster.stop();
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** Per count (medians over the rounds): iterations/s, CPU per iteration, and what each shard did per iteration. */
export function partitionLines(figures: PartitionFigure[]): string[] {
  const counts = [...new Set(figures.map((f) => f.partitions))];
  const lines = ['partitions on a 3-shard Redis Cluster (every role in one process; medians of the rounds):'];
  for (const count of counts) {
    const fs = figures.filter((f) => f.partitions === count);
    const perIter = (f: PartitionFigure, x: number) => x / f.iterations;
    const shardCpu = fs[0]!.shards.map((_, i) => median(fs.map((f) => perIter(f, f.shards[i]!.cpuMs))));
    const shardCmds = fs[0]!.shards.map((_, i) => median(fs.map((f) => perIter(f, f.shards[i]!.commands))));
    lines.push(
      `  ${count} partition(s): ${median(fs.map((f) => f.iterations / f.seconds)).toFixed(0)} iterations/s, product CPU ${median(fs.map((f) => perIter(f, f.productCpuMs))).toFixed(2)} ms/iteration; per shard, ms of Redis CPU / iteration: ${shardCpu.map((c) => c.toFixed(3)).join(', ')}; commands / iteration: ${shardCmds.map((c) => c.toFixed(1)).join(', ')}; the busiest shard's CPU bounds Redis at ${(1000 / Math.max(...shardCpu)).toFixed(0)} iterations/s`,
    );
  }
  return lines;
}

/** The #25 target: 3 partitions at least 1.5× the iterations/s of 1, measured, and as the busiest shard bounds it. */
export function partitionTarget(figures: PartitionFigure[]): string {
  const rate = (n: number) => median(figures.filter((f) => f.partitions === n).map((f) => f.iterations / f.seconds));
  const bound = (n: number) =>
    median(
      figures
        .filter((f) => f.partitions === n)
        .map((f) => f.iterations / (Math.max(...f.shards.map((s) => s.cpuMs)) / 1000)),
    );
  const measured = rate(3) / rate(1);
  return `  3 vs 1 partitions, iterations/s          ${measured.toFixed(2)}×  (target ≥ 1.5×)  ${measured >= 1.5 ? 'met' : 'MISSED'}; Redis-bound (the busiest shard's CPU): ${(bound(3) / bound(1)).toFixed(2)}×`;
}
