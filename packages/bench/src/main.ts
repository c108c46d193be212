import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer } from '@agentloop/testing';
import { partitionLines, partitionTarget, partitionsBench } from './partitions-bench.js';
import { rawFlowLoop, rawRoundTrip } from './raw-bullmq.js';
import { RESUME_GAP_MS, resumeLatency } from './resume-latency.js';
import { contextBench } from './context.js';
import { scaleOut } from './scale-out.js';
import { commandCount, ms, percentile } from './stats.js';
import { startMockProcess } from './processes.js';
import { listingBench, runMemoryBench, tenantLimitCost } from './tenant-safety.js';
import { idleCpuAfterLoad, idleLine, idleTarget } from './idle.js';
import { providersFromArgs } from './providers.js';
import { coreFigures, coreLines, coreTargetLines, type CoreContext, type CoreFigures } from './core-figures.js';
import { priorConversation } from './product-loop.js';
import { productWorkloads } from './product-workloads.js';
import { localToolLines, localToolTargetLines } from './local-figures.js';
import { fairnessBench, fairLines, fairTarget } from './fairness.js';
import { loadedFairnessBench, loadedFairnessLines, loadedFairnessTarget } from './fairness-running.js';
import { threadCost, threadCostLines } from './thread-cost.js';
import { capacityBench } from './capacity.js';
import { capacityLines, capacityTargets } from './capacity-lines.js';
import { webhookDelivery, webhookDeliveryLines } from './webhook-delivery.js';
import { tracingCost, tracingCostLines } from './tracing-cost.js';
import { toolCallBench, toolCallLines } from './tool-calls.js';
import { productToolBench, productToolLines } from './tool-calls-product.js';
import { latencyFigures, likeForLikeLines } from './iteration-latency.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 200);
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 5);
const CONCURRENCY = { orchestrator: 50, tools: 20 };

/** BENCH_TOOL_POOL=local: the core workload's tool runs locally, in the orchestrator's iteration (SPEC §6). */
const TOOL_POOL = process.env.BENCH_TOOL_POOL ?? 'default';
const TOOLS_MODULE = path.join(os.tmpdir(), `agentloop-bench-tools-${process.pid}.mjs`);
/** The same tools with `noop` local: the core figures' `local` loop (issue 26) runs on it. */
const LOCAL_TOOLS_MODULE = path.join(os.tmpdir(), `agentloop-bench-tools-local-${process.pid}.mjs`);
const toolsModule = (pool: string) => `export default [
  { name: 'noop', description: 'does nothing', parameters: { type: 'object' }, sideEffect: 'read', pool: ${JSON.stringify(pool)}, async execute() { return { ok: true }; } },
  { name: 'notify', description: 'an external effect (needs approval)', parameters: { type: 'object' }, sideEffect: 'external', async execute() { return { ok: true }; } },
];\n`;
fs.writeFileSync(TOOLS_MODULE, toolsModule(TOOL_POOL));
fs.writeFileSync(LOCAL_TOOLS_MODULE, toolsModule('local'));
const PROVIDERS = providersFromArgs(process.argv.slice(2));
/** BENCH_ONLY=core: only the core figures (raw loop vs product: CPU, throughput, Redis commands) and the idle CPU. */
const ONLY_CORE = process.env.BENCH_ONLY === 'core';
/** BENCH_IDLE=0 with BENCH_ONLY=core: the core figures alone (A/B runs of the loops without the idle figure's minute). */
const IDLE = process.env.BENCH_IDLE !== '0';

const LISTING_HISTORY = (process.env.BENCH_LISTING_HISTORY ?? '100,100000').split(',').map(Number);
const PARKED = (process.env.BENCH_PARKED ?? '10,10000').split(',').map(Number);
/** Tenant a's queued runs when tenant b creates one (fair scheduling); BENCH_ONLY=fairness measures only this. */
const FAIR_BACKLOGS = (process.env.BENCH_FAIR_BACKLOGS ?? '100,2000').split(',').map(Number);
/** Tenant a's runs running and queued (`running,queued`) when tenant b creates one, with a's running runs iterating. */
const [FAIR_RUNNING, FAIR_RUNNING_QUEUED] = (process.env.BENCH_FAIR_LOADED ?? '200,2000').split(',').map(Number) as [
  number,
  number,
];

async function main() {
  if (process.env.BENCH_ONLY === 'tools') {
    // no Redis and no model: the ways a runner executes one call, side by side
    console.log(`agentloop bench, tool calls: node ${process.version}`);
    if (process.env.BENCH_TOOLS_PRODUCT !== 'only') console.log(toolCallLines(await toolCallBench()).join('\n'));
    console.log(productToolLines(await productToolBench()).join('\n'));
    return;
  }
  console.log(
    `agentloop bench: ${RUNS} concurrent runs × ${ITERATIONS} iterations (one no-op tool call each but the last), zero-latency mock model, node ${process.version}`,
  );
  const server = await RedisServer.start();
  const admin = new Redis(server.url);
  const bull = new Redis(server.url, { maxRetriesPerRequest: null });
  const mock = await startMockProcess(['tool-loop', String(ITERATIONS)]);
  try {
    const coreCtx: CoreContext = {
      redisUrl: server.url,
      admin,
      mockUrl: mock.url,
      toolsModule: TOOLS_MODULE,
      localToolsModule: LOCAL_TOOLS_MODULE,
      iterations: ITERATIONS,
      concurrency: CONCURRENCY,
      prior: priorConversation(10),
    };
    if (process.env.BENCH_ONLY === 'webhooks') {
      console.log(
        webhookDeliveryLines(
          await webhookDelivery(coreCtx, admin, Number(process.env.BENCH_WEBHOOK_RUNS ?? 1000)),
        ).join('\n'),
      );
      return;
    }
    if (process.env.BENCH_ONLY === 'tracing') {
      // SPEC §8: CPU and bytes exported per iteration, tracing on vs off (BENCH_TRACING_BASELINE_CLI: a build without tracing, to compare off with)
      const o = {
        runs: Number(process.env.BENCH_TRACING_RUNS ?? 400),
        parallel: 50,
        warmup: Number(process.env.BENCH_TRACING_WARMUP ?? 200),
        rounds: Number(process.env.BENCH_TRACING_ROUNDS ?? 3),
        baselineCli: process.env.BENCH_TRACING_BASELINE_CLI,
      };
      console.log(tracingCostLines(await tracingCost({ ...coreCtx }, o), { ...o, iterations: ITERATIONS }).join('\n'));
      return;
    }
    if (process.env.BENCH_ONLY === 'threads') {
      console.log(
        threadCostLines(await threadCost(coreCtx, admin, Number(process.env.BENCH_THREAD_RUNS ?? 20))).join('\n'),
      );
      return;
    }
    if (process.env.BENCH_ONLY === 'capacity') {
      const cap = await capacityBench(
        server.url,
        admin,
        Number(process.env.BENCH_CAPACITY_RUNS ?? 1000),
        Number(process.env.BENCH_CAPACITY_ITERATIONS ?? 4),
      );
      console.log(`${capacityLines(cap).join('\n')}\n\ntargets:\n${capacityTargets(cap).join('\n')}`);
      return;
    }
    if (process.env.BENCH_ONLY === 'latency') {
      const l = likeForLikeLines(await latencyFigures(coreCtx, PROVIDERS[0]!, 'bench-latency'));
      return void console.log(`${l.lines.join('\n')}\n\ntargets:\n${l.target}`);
    }
    if (process.env.BENCH_ONLY === 'partitions') {
      // SPEC §1: 1 vs 3 partitions on a real 3-shard Redis Cluster started for it
      const figures = await partitionsBench(coreCtx, {
        runs: Number(process.env.BENCH_PARTITION_RUNS ?? 400),
        parallel: 50,
        rounds: Number(process.env.BENCH_PARTITION_ROUNDS ?? 3),
        counts: [1, 3],
      });
      console.log(`${partitionLines(figures).join('\n')}\n\ntargets:\n${partitionTarget(figures)}`);
      return;
    }
    if (process.env.BENCH_ONLY === 'fairness') {
      const fair = await fairnessBench(coreCtx, admin, FAIR_BACKLOGS);
      const loaded = await loadedFairnessBench(coreCtx, admin, FAIR_RUNNING, FAIR_RUNNING_QUEUED);
      console.log(
        `${[...fairLines(fair), ...loadedFairnessLines(loaded)].join('\n')}\n\ntargets:\n${fairTarget(fair)}\n${loadedFairnessTarget(loaded)}`,
      );
      return;
    }
    // core only: the idle figure first, in a process that has run nothing else yet (a major GC after a load costs in
    // proportion to the live heap, and the bench's own phases would add to it)
    const idleFirst = ONLY_CORE && IDLE ? await idleCpuAfterLoad(server.url, mock.url, TOOLS_MODULE, ITERATIONS) : null;
    const cores: CoreFigures[] = [];
    for (const provider of PROVIDERS) {
      cores.push(await coreFigures(coreCtx, provider));
      const c = cores[cores.length - 1]!;
      console.log(`${[...coreLines(c), ...localToolLines(c)].join('\n')}\n`);
    }
    const coreTargets = () =>
      cores.forEach((c) => console.log([...coreTargetLines(c), ...localToolTargetLines(c)].join('\n')));
    if (ONLY_CORE) {
      console.log(`${idleFirst ? idleLine(idleFirst) : 'idle CPU: not measured (BENCH_IDLE=0)'}\n\ntargets:`);
      coreTargets();
      if (idleFirst) console.log(idleTarget(idleFirst));
      return;
    }
    const rt = await rawRoundTrip(bull, 'bench-rt', 300);
    await admin.config('RESETSTAT');
    const raw = await rawFlowLoop(bull, 'bench-raw', RUNS, ITERATIONS, CONCURRENCY);
    const rawCommands = await commandCount(admin);
    const rawPerIter = rawCommands / (RUNS * ITERATIONS);

    const loaded = { runs: RUNS, parallel: RUNS };
    const iters = RUNS * ITERATIONS;
    const rtP50 = percentile(rt, 50);
    console.log(
      `\nraw BullMQ job round trip (add → completed, one at a time):  p50 ${ms(rtP50)}  p99 ${ms(percentile(rt, 99))}`,
    );
    console.log(
      `raw BullMQ flow loop (iteration job + one child per hop):   ${(iters / raw.seconds).toFixed(0)} iterations/s, wall p50 ${ms(percentile(raw.perIteration, 50))}, ${rawPerIter.toFixed(1)} Redis commands / iteration\n`,
    );
    const core = await productWorkloads(coreCtx, admin, PROVIDERS, loaded, rawPerIter);
    const { small, large } = core[0]!;
    const latency = likeForLikeLines(await latencyFigures(coreCtx, PROVIDERS[0]!, 'bench-latency'));
    console.log(`${latency.lines.join('\n')}\n`);
    const cmdRatio = small.commands / iters / rawPerIter;
    const growth = percentile(large.overhead, 50) / percentile(small.overhead, 50);
    const cmdGrowth = large.commands / small.commands;
    const targets = () => {
      console.log(latency.target);
      console.log(
        `  Redis commands / iteration vs raw      ${cmdRatio.toFixed(2)}×  (target ≤ 1.3×)  ${cmdRatio <= 1.3 ? 'met' : 'MISSED'}`,
      );
      console.log(
        `  200-message vs 10-message overhead     ${growth.toFixed(2)}×  (target ≤ 1.2×)  ${growth <= 1.2 ? 'met' : 'MISSED'}`,
      );
      console.log(`  200-message vs 10-message commands     ${cmdGrowth.toFixed(2)}×`);
    };
    if (!PROVIDERS.includes('openai')) {
      console.log(`\ntargets (${PROVIDERS[0]}):`);
      targets();
      coreTargets();
      return; // the rest (resume, context, scale-out) does not depend on the provider adapter
    }
    const resume = await resumeLatency(server.url, admin, TOOLS_MODULE, PARKED, 100);
    for (const r of resume) {
      console.log(
        `resume latency with ${r.parked} parked runs (decision request → first model request of the resumed iteration): p50 ${ms(r.p50)}  p99 ${ms(r.p99)}  (raw BullMQ round trip sampled between them: p50 ${ms(r.rawP50)})`,
      );
      if (r.coldP50 !== undefined)
        console.log(
          `  the first 100 resumes of the fresh process (JIT warming up, not counted above): p50 ${ms(r.coldP50)}`,
        );
    }
    // each resume sample is paced (idle time before it) and paired with a raw round trip paced the same way
    const resumeRatio = resume[0]!.p50 / resume[0]!.rawP50;
    const resumeGrowth = resume[resume.length - 1]!.p50 / resume[0]!.p50;
    const ctx = await contextBench(admin);
    for (const c of ctx.counting)
      console.log(`token counting per iteration at ${c.messages} messages: p50 ${ms(c.p50)}  p99 ${ms(c.p99)}`);
    console.log(`compressor end to end, ${JSON.stringify(ctx.compression.result)}: ${ms(ctx.compression.seconds)}`);
    const scale = await scaleOut(server.url, { runs: 100, callsPerRun: 4, concurrency: 4 });
    for (const r of scale)
      console.log(
        `tool calls/s with ${r.runners} tool-runner process(es) (20 ms tool, 4 calls at a time each): ${r.callsPerSecond.toFixed(0)}`,
      );
    console.log(
      `  scale-out ratio 2 vs 1 tool-runner: ${(scale[1]!.callsPerSecond / scale[0]!.callsPerSecond).toFixed(2)}× (2 cores: bounded by the machine)`,
    );
    const mem = await runMemoryBench(server.url, admin, mock.url, TOOLS_MODULE, ITERATIONS);
    console.log(
      `Redis memory per finished run (${mem.iterations} iterations with tool calls, ${mem.status}): p50 ${(mem.bytesPerRun / 1024).toFixed(1)} KB in ${mem.keysPerRun} keys; after retention: ${mem.bytesAfterRetention} bytes in ${mem.keysAfterRetention} keys`,
    );
    const limitCost = await tenantLimitCost(server.url, admin);
    console.log(
      `tenant request limit: ${limitCost.limited.toFixed(2)} round trips per request with a rate, ${limitCost.free.toFixed(2)} without (+${limitCost.extra.toFixed(2)})`,
    );
    const listing = await listingBench(server.url, admin, LISTING_HISTORY);
    for (const l of listing)
      console.log(
        `listing p50 with ${l.history} finished runs in the history: all ${ms(l.all)}, ?status=queued ${ms(l.queued)}`,
      );
    const [small0, big0] = [listing[0]!, listing[listing.length - 1]!];
    const fair = await fairnessBench(coreCtx, admin, FAIR_BACKLOGS);
    console.log(fairLines(fair).join('\n'));
    const idle = await idleCpuAfterLoad(server.url, mock.url, TOOLS_MODULE, ITERATIONS);
    console.log(idleLine(idle));
    console.log(`\ntargets:`);
    console.log(
      `  Redis memory per finished 5-iteration run ${(mem.bytesPerRun / 1024).toFixed(1)} KB  (target ≤ 20 KB)  ${mem.bytesPerRun <= 20 * 1024 ? 'met' : 'MISSED'}; after retention ${mem.bytesAfterRetention} bytes (target 0)  ${mem.bytesAfterRetention === 0 ? 'met' : 'MISSED'}`,
    );
    console.log(
      `  tenant-limit check                     +${limitCost.extra.toFixed(2)} round trips per request  (target ≤ 1)  ${limitCost.extra <= 1.001 ? 'met' : 'MISSED'}`,
    );
    const listRatio = Math.max(big0.all / small0.all, big0.queued / small0.queued);
    console.log(
      `  listing, ${big0.history} vs ${small0.history} runs of history  ${(big0.all / small0.all).toFixed(2)}× all, ${(big0.queued / small0.queued).toFixed(2)}× ?status=queued  (target ≤ 1.2×)  ${listRatio <= 1.2 ? 'met' : 'MISSED'}`,
    );
    console.log(idleTarget(idle));
    console.log(fairTarget(fair));
    console.log(
      `  token counting, 2000 vs 10 messages    ${(ctx.counting[1]!.p50 / ctx.counting[0]!.p50).toFixed(2)}×  (target: flat)`,
    );
    console.log(
      `  resume p50 / raw round trip p50 (paired, ${RESUME_GAP_MS} ms idle before each)  ${resumeRatio.toFixed(2)}×  (target < 3×)  ${resumeRatio < 3 ? 'met' : 'MISSED'}; vs the back-to-back round trip ${(resume[0]!.p50 / rtP50).toFixed(2)}×`,
    );
    const last = resume[resume.length - 1]!;
    console.log(
      `  resume p50, ${PARKED[PARKED.length - 1]} vs ${PARKED[0]} parked runs  ${resumeGrowth.toFixed(2)}×; in units of the paired raw round trip ${(last.p50 / last.rawP50 / resumeRatio).toFixed(2)}×  (target: no growth)`,
    );
    targets();
    coreTargets();
  } finally {
    mock.child.kill('SIGTERM');
    admin.disconnect();
    bull.disconnect();
    await server.stop();
    fs.rmSync(TOOLS_MODULE, { force: true });
    fs.rmSync(LOCAL_TOOLS_MODULE, { force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
