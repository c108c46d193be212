import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serve } from '@agentloop/cli/serve';
import { EVERYTHING_MAIN, RedisServer } from '@agentloop/testing';
import { cpuMs } from './tool-calls.js';
import { startMockProcess } from './processes.js';
import { MODELS } from './providers.js';

/**
 * BENCH_ONLY=tools, through the product: runs whose every iteration but the last calls one tool, 20 runs at a time
 * (so 20 calls in flight through one tool-runner), all roles in this process, against the mock model in its own. The
 * same workload per way the tool is executed; the differences between rows are the ways' own costs.
 */
export interface ProductToolFigure {
  kind: string;
  callsPerSecond: number;
  /** ms of CPU per tool call: the whole product (its iterations too), Redis and the tools' processes; not the mock model. */
  cpuPerCall: number;
}

const RUNS = Number(process.env.BENCH_TOOL_RUNS ?? 100);
const CALLS_PER_RUN = 5;
const IN_FLIGHT = 20;

const KINDS = [
  { kind: 'module tool on its pool (a tool job per call)', tool: 'noop_pooled' },
  { kind: 'module tool, pool "local" (in the orchestrator)', tool: 'noop_local' },
  { kind: 'module tool, isolation "process"', tool: 'noop_isolated' },
  { kind: 'MCP tool over stdio (server-everything echo)', tool: 'everything__echo', args: '{"message":"bench"}' },
];

export async function productToolBench(): Promise<ProductToolFigure[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-bench-product-tools-'));
  const module = path.join(dir, 'tools.mjs');
  const noop = (name: string, extra: string) =>
    `{ name: '${name}', sideEffect: 'read', parameters: { type: 'object' }, execute: () => ({ ok: true }), ${extra} }`;
  fs.writeFileSync(
    module,
    `export default [${noop('noop_pooled', '')}, ${noop('noop_local', "pool: 'local'")}, ${noop('noop_isolated', "isolation: 'process'")}];\n`,
  );
  const redis = await RedisServer.start();
  const figures: ProductToolFigure[] = [];
  try {
    // BENCH_TOOL_KINDS=local,isolated…: only the rows whose description names one of these
    const only = process.env.BENCH_TOOL_KINDS?.split(',');
    await measureKind(redis.url, module, KINDS.length, KINDS[0]!); // a first product warms this process's code: not a row
    for (const [i, k] of KINDS.entries())
      if (!only || only.some((w) => k.kind.includes(w))) figures.push(await measureKind(redis.url, module, i, k));
  } finally {
    await redis.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return figures;
}

async function measureKind(
  redisUrl: string,
  module: string,
  i: number,
  k: (typeof KINDS)[number],
): Promise<ProductToolFigure> {
  const mock = await startMockProcess(['tool-loop', String(CALLS_PER_RUN + 1), k.tool, ...(k.args ? [k.args] : [])]);
  const counts = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      AGENTLOOP_PREFIX: `bench-tools-${i}`,
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      AGENTLOOP_AUTH: 'disabled',
      LOG_LEVEL: 'error',
      AGENTLOOP_TOOL_MODULES: module,
      AGENTLOOP_TOOL_CONCURRENCY: String(IN_FLIGHT),
      OPENAI_API_KEY: 'sk-bench',
      OPENAI_BASE_URL: `${mock.url}/v1`,
      AGENTLOOP_MCP_SERVERS: JSON.stringify([
        { name: 'everything', command: process.execPath, args: [EVERYTHING_MAIN, 'stdio'], trust: 'trusted' },
      ]),
    },
    onIterationTimed: (t) => {
      const n = (counts.get(t.runId) ?? 0) + 1;
      counts.set(t.runId, n);
      if (n >= CALLS_PER_RUN + 1) waiters.get(t.runId)?.();
    },
  });
  const body = JSON.stringify({
    input: 'bench',
    model: MODELS.openai,
    tools: [k.tool],
    limits: { maxIterations: CALLS_PER_RUN + 2 },
  });
  const finished = async (id: string) => {
    const r = (await (await fetch(`${proc.apiUrl}/v1/runs/${id}`)).json()) as { status: string };
    return ['completed', 'failed', 'cancelled'].includes(r.status);
  };
  const run = async () => {
    const res = await fetch(`${proc.apiUrl}/v1/runs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    });
    if (!res.ok) throw new Error(`bench: a run was refused: ${res.status} ${await res.text()}`);
    const { id } = (await res.json()) as { id: string };
    // its last iteration, seen by the orchestrator's timing hook; a look at the run every 100 ms (the hook misses some runs: why is not this bench’s concern; the same look for every row)
    while ((counts.get(id) ?? 0) < CALLS_PER_RUN + 1) {
      const seen = await new Promise<boolean>((r) => {
        const timer = setTimeout(() => r(false), 100);
        waiters.set(id, () => (clearTimeout(timer), r(true)));
      });
      if (!seen && (await finished(id))) break;
    }
    waiters.delete(id);
    counts.delete(id);
  };
  const batch = async (runs: number) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next++ < runs) await run();
      }),
    );
  };
  try {
    await batch(IN_FLIGHT);
    const cpu0 = cpuMs([mock.child.pid]);
    const t0 = performance.now();
    await batch(RUNS);
    const seconds = (performance.now() - t0) / 1000;
    const calls = RUNS * CALLS_PER_RUN;
    return { kind: k.kind, callsPerSecond: calls / seconds, cpuPerCall: (cpuMs([mock.child.pid]) - cpu0) / calls };
  } finally {
    await proc.stop();
    mock.child.kill('SIGTERM');
  }
}

export function productToolLines(figures: ProductToolFigure[]): string[] {
  return [
    `through the product: ${RUNS} runs × ${CALLS_PER_RUN} tool calls, ${IN_FLIGHT} runs (so ${IN_FLIGHT} calls) in flight, every role in one process`,
    ...figures.map(
      (f) =>
        `  ${f.kind.padEnd(50)} ${f.callsPerSecond.toFixed(0).padStart(5)} calls/s  CPU ${f.cpuPerCall.toFixed(2)} ms/call (iterations included)`,
    ),
  ];
}
