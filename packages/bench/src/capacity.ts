import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { startMockProcess, startServeProcess } from './processes.js';
import { connectInspector } from './inspector.js';
import { liveHeapProbe, type LiveHeapFigures } from './capacity-heap.js';
import { MODELS } from './providers.js';
import { percentile } from './stats.js';
import { SLOW_LOG, heapSpaces, metric, schedulingProbe } from './capacity-probes.js';
import { runMemory } from './tenant-safety.js';

export interface CapacityFigures {
  runs: number;
  /** Orchestrator processes (BENCH_CAPACITY_ORCHESTRATORS), the slots split between them. */
  orchestrators: number;
  iterations: number;
  /** The mock's answer time, ms (uniform between the two). */
  modelMs: [number, number];
  completed: number;
  failed: number;
  seconds: number;
  iterationsPerS: number;
  /**
   * Runs running at the plateau (samples with at least 90% of the most), and the orchestrator's heap in use (the
   * least metrics sample there, over the least idle one: the sawtooth's lower edge, garbage included) and Redis' memory
   * above the idle baseline (the least sample there).
   */
  peakRunning: number;
  heapPerActiveB: number;
  /**
   * The same without the young generation (`nodejs_heap_space_size_used_bytes` of `new` and `new_large_object`): its up to 16 MB of
   * short-lived garbage between scavenges is 16 KB per run at 1,000 runs, which the least sample rarely escapes.
   */
  heapOldPerActiveB: number;
  /** The orchestrator's live heap: a full collection before each reading (capacity-heap.ts). */
  live: LiveHeapFigures;
  redisPerActiveB: number;
  /** Redis' memory above the baseline once every run finished (retained for AGENTLOOP_RUN_RETENTION_S), per run. */
  redisPerFinishedB: number;
  finishedRunKeysB: number;
  parked: number;
  redisPerParkedB: number;
  parkedRunKeysB: number;
  /** MEMORY USAGE of a finished run's keys by its model calls. */
  byLength: Array<{ length: number; bytes: number }>;
  /** Job ready (BullMQ's `waiting` event) → taken (`active`), Redis' clock, ms. */
  scheduling: Record<'orchestrator' | 'firstIterations' | 'tools', { n: number; p50: number; p99: number }>;
  orchestratorCpuS: number;
}

const TOOLS = `export default [
  { name: 'noop', description: 'waits 50-500 ms', parameters: { type: 'object' }, sideEffect: 'read', async execute() { await new Promise((r) => setTimeout(r, 50 + Math.random() * 450)); return { ok: true }; } },
  { name: 'notify', description: 'an external effect (needs approval)', parameters: { type: 'object' }, sideEffect: 'external', async execute() { return { ok: true }; } },
];\n`;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Capacity (issue 25): `runs` runs at once, each `iterations` model calls answered in 1–3 s with a `noop` call of
 * 50–500 ms between them; api, orchestrator and tool-runner each a process of its own. Measured: the orchestrator's
 * heap and Redis' memory per running run at the peak, Redis per finished and per parked run, how a finished run's
 * keys grow with its length, job ready → taken (p50, p99), iterations per second.
 */
/** BENCH_CAPACITY_LIVE_HEAP=0: no live-heap readings (each a full collection, a 1 s stop at 10,000 runs) in the load. */
const LIVE_HEAP = process.env.BENCH_CAPACITY_LIVE_HEAP !== '0';

export async function capacityBench(
  redisUrl: string,
  admin: Redis,
  runs: number,
  iterations: number,
): Promise<CapacityFigures> {
  const prefix = 'bench-cap';
  const toolsModule = path.join(os.tmpdir(), `agentloop-capacity-tools-${process.pid}.mjs`);
  fs.writeFileSync(toolsModule, TOOLS);
  // BENCH_CAPACITY_MODEL_MS=min,max: the mock's answer time [1000,3000]; a long one holds every run in a model call
  const [minMs = 1000, maxMs = 3000] = (process.env.BENCH_CAPACITY_MODEL_MS ?? '1000,3000').split(',').map(Number);
  const mock = await startMockProcess(['slow-loop', String(iterations), String(minMs), String(maxMs)]);
  const env = {
    REDIS_URL: redisUrl,
    AGENTLOOP_PREFIX: prefix,
    AGENTLOOP_PORT: '0',
    AGENTLOOP_HOST: '127.0.0.1',
    AGENTLOOP_AUTH: 'disabled',
    AGENTLOOP_METRICS_PORT: '0',
    AGENTLOOP_TOOL_MODULES: toolsModule,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${mock.url}/v1`,
    LOG_LEVEL: 'error',
    // a slot per run in a model call; tools hold a run a tenth of the time
    AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(runs + 100),
    AGENTLOOP_TOOL_CONCURRENCY: String(Math.ceil(runs / 3) + 50),
  };
  // BENCH_CAPACITY_CLI: another build's CLI entry (packages/cli/dist/main.js of a baseline) for the three processes
  const cli = process.env.BENCH_CAPACITY_CLI;
  if (SLOW_LOG) fs.writeFileSync(SLOW_LOG, `orchestrator spawned ${Date.now()}\n`);
  // BENCH_CAPACITY_ORCHESTRATORS=n: the orchestrator role in n processes, the slots split between them (the heap
  // figures are the first one's; the CPU figure is their sum)
  const orchestrators = Number(process.env.BENCH_CAPACITY_ORCHESTRATORS ?? 1);
  const orchEnv = { ...env, AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(Math.ceil(runs / orchestrators) + 100) };
  const orchs: Array<Awaited<ReturnType<typeof startServeProcess>>> = [];
  for (let i = 0; i < orchestrators; i++)
    orchs.push(
      await startServeProcess(orchEnv, {
        roles: ['orchestrator'],
        inspect: i === 0,
        cli,
        nodeArgs: process.env.BENCH_CAPACITY_ORCHESTRATOR_NODE_ARGS?.split(' ').filter(Boolean),
        stdoutFile: i === 0 ? process.env.BENCH_CAPACITY_ORCHESTRATOR_STDOUT : undefined,
      }),
    );
  const procs = [
    ...orchs,
    await startServeProcess(env, { roles: ['tool-runner'], cli }),
    await startServeProcess(env, { roles: ['api'], cli }),
  ];
  const [orch, api] = [orchs[0]!, procs[procs.length - 1]!];
  const orchestratorCpu = async () =>
    (await Promise.all(orchs.map((o) => metric(o.metricsUrl, 'process_cpu_seconds_total')))).reduce((a, b) => a + b, 0);
  const probes = [schedulingProbe(admin, prefix, 'orchestrator'), schedulingProbe(admin, prefix, 'tools-default')];
  const count = (status: string) => admin.zcard(`${prefix}:tenant:default:runs:${status}`);
  const insp = await connectInspector(orch.inspectorUrl);
  const inFlight = async () => ({
    running: await count('running'),
    jobs: await admin.llen(`${prefix}:orchestrator:active`),
  });
  const snapshotDir = process.env.BENCH_CAPACITY_SNAPSHOTS;
  const live = liveHeapProbe(insp, inFlight, { runs, everyMs: 2000, snapshotDir });
  const ended = async () => (await count('completed')) + (await count('failed'));
  const usedMemory = async () => Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
  const heap = () => heapSpaces(orch.metricsUrl);
  const create = async (input: string) => {
    const body = JSON.stringify({
      input,
      model: MODELS.openai,
      tools: ['noop', 'notify'],
      limits: { maxIterations: 100 },
    });
    const res = await fetch(`${api.apiUrl}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { id: string }).id;
  };
  const createMany = async (n: number, input: string) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i += 100)
      ids.push(...(await Promise.all(Array.from({ length: Math.min(100, n - i) }, () => create(input)))));
    return ids;
  };
  try {
    await Promise.all(probes.map((p) => p.ready()));
    // the live heap: a full collection first. The baseline is the idle process after a first load of the same
    // workload (up to 1,000 runs; BENCH_CAPACITY_WARMUP): its code loaded and optimized, its pools (node:http's parsers)
    // and bounded caches filled as in a process that has run for a while, the runs' own entries gone as they ended.
    // After 50 runs only, the code optimized during the load (~1.3 MB at 1,000 runs in a heap snapshot) counted as
    // heap per run. The fresh process and the idle one after the load are read too.
    const freshB = (await insp.liveHeap()).usedB;
    const warmup = Number(process.env.BENCH_CAPACITY_WARMUP ?? Math.min(runs, 1000));
    await createMany(warmup, 'go');
    while ((await ended()) < warmup) await sleep(250);
    await sleep(1000);
    const idleB = (await insp.liveHeap()).usedB;
    const idleResources = await insp.resources();
    const [warmCompleted, warmFailed] = [await count('completed'), await count('failed')];
    if (snapshotDir) await insp.snapshot(path.join(snapshotDir, 'idle.heapsnapshot'));
    probes.forEach((p) => p.reset());
    // the old figure: the garbage-collected sawtooth's lower edge, the least of the metrics samples, idle and at the peak
    let [heap0, old0] = [Infinity, Infinity];
    for (let i = 0; i < 10; i++, await sleep(300)) {
      const h = await heap();
      [heap0, old0] = [Math.min(heap0, h.used), Math.min(old0, h.used - h.young)];
    }
    const [redis0, cpu0] = [await usedMemory(), await orchestratorCpu()];
    const samples: Array<{ running: number; heapB: number; oldB: number; redisB: number; clear: boolean }> = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const [h, clear] = [await heap(), live.clear()];
        const running = await count('running');
        samples.push({
          running,
          heapB: h.used - heap0,
          oldB: h.used - h.young - old0,
          redisB: (await usedMemory()) - redis0,
          clear,
        });
        if (LIVE_HEAP) await live.tick(running);
        await sleep(300);
      }
    })();
    const t0 = performance.now();
    live.start();
    const profileDir = process.env.BENCH_CAPACITY_PROFILE;
    if (profileDir) await insp.startProfiles();
    const ids = await createMany(runs, 'go');
    while ((await ended()) < warmup + runs) await sleep(250);
    if (profileDir) await insp.stopProfiles(profileDir);
    const seconds = (performance.now() - t0) / 1000;
    sampling = false;
    await sampler;
    const top = Math.max(...samples.map((x) => x.running));
    // the sawtooth samples within 1.5 s of a forced collection are left out (they would read as live heap); the ones
    // left still follow a forced collection by 1.5–2 s, which lowers this figure against runs without them
    const plateau = samples.filter((x) => x.running >= 0.9 * top && x.clear);
    const peak = {
      running: Math.min(...plateau.map((x) => x.running)),
      heapB: Math.min(...plateau.map((x) => x.heapB)),
      oldB: Math.min(...plateau.map((x) => x.oldB)),
      redisB: Math.min(...plateau.map((x) => x.redisB)),
    };
    const orchestratorCpuS = (await orchestratorCpu()) - cpu0;
    const [completed, failed] = [(await count('completed')) - warmCompleted, (await count('failed')) - warmFailed];
    const redisFinished = (await usedMemory()) - redis0;
    await sleep(1000);
    const afterB = (await insp.liveHeap()).usedB;
    const afterResources = await insp.resources();
    if (snapshotDir) await insp.snapshot(path.join(snapshotDir, 'after.heapsnapshot'));
    const liveFigures = live.figures({ freshB, idleB, afterB, warmup, idleResources, afterResources });
    const sample = async (of: string[]) =>
      percentile(await Promise.all(of.slice(0, 20).map(async (id) => (await runMemory(admin, prefix, id)).bytes)), 50);
    const finishedRunKeysB = await sample(ids);
    const scheduling = {
      orchestrator: probes[0]!.figures(),
      firstIterations: probes[0]!.firstFigures(),
      tools: probes[1]!.figures(),
    };

    const parked = Math.min(runs, 2000);
    const beforeParked = await usedMemory();
    const parkedIds = await createMany(parked, '[park] ask first');
    while ((await count('paused')) < parked) await sleep(250);
    const redisPerParkedB = ((await usedMemory()) - beforeParked) / parked;
    const parkedRunKeysB = await sample(parkedIds);

    const byLength: CapacityFigures['byLength'] = [];
    for (const length of [2, 4, 8, 16, 32]) {
      const before = await count('completed');
      const lenIds = await createMany(5, `[fast] [len=${length}] go`);
      while ((await count('completed')) < before + 5) await sleep(100);
      byLength.push({ length, bytes: await sample(lenIds) });
    }
    return {
      runs,
      orchestrators,
      iterations,
      modelMs: [minMs, maxMs],
      completed,
      failed,
      seconds,
      iterationsPerS: (completed * iterations) / seconds,
      peakRunning: peak.running,
      heapPerActiveB: peak.heapB / Math.max(1, peak.running),
      heapOldPerActiveB: peak.oldB / Math.max(1, peak.running),
      live: liveFigures,
      redisPerActiveB: peak.redisB / Math.max(1, peak.running),
      redisPerFinishedB: redisFinished / runs,
      finishedRunKeysB,
      parked,
      redisPerParkedB,
      parkedRunKeysB,
      byLength,
      scheduling,
      orchestratorCpuS,
    };
  } finally {
    insp.close();
    await Promise.all(probes.map((p) => p.close()));
    await Promise.all(procs.map((p) => p.stop()));
    mock.child.kill();
    fs.rmSync(toolsModule, { force: true });
    await admin.eval(`for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('UNLINK', k) end`, 0, `${prefix}*`);
  }
}
