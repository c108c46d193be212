import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';
import { postJson } from './durable-floor-loop.js';
import { startServeProcess } from './processes.js';
import { MODELS } from './providers.js';

export interface TracingCostContext {
  redisUrl: string;
  admin: Redis;
  mockUrl: string;
  toolsModule: string;
  /** Model calls per run (the mock's tool-loop). */
  iterations: number;
}

/** One mode's figures: CPU of the product process and what it exported, per iteration. */
export interface TracingFigure {
  mode: string;
  /** Per measured window (one per round). */
  cpuMsPerIteration: number[];
  bytesPerIteration: number;
  exportsPerSecond: number;
  iterationsPerSecond: number[];
}

/** An OTLP/HTTP endpoint that answers 200 and counts what it got (the bench's Jaeger, minus its cost). */
async function countingReceiver(): Promise<{
  url: string;
  bytes: () => number;
  requests: () => number;
  close: () => Promise<void>;
}> {
  let bytes = 0;
  let requests = 0;
  const server = http.createServer((req, res) => {
    requests++;
    req.on('data', (c: Buffer) => void (bytes += c.length));
    req.on('end', () =>
      res.writeHead(200, { 'content-type': req.headers['content-type'] ?? 'application/x-protobuf' }).end(),
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bytes: () => bytes,
    requests: () => requests,
    close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }), // prettier-ignore
  };
}

/** process_cpu_seconds_total of the product process, read from its /metrics (either exposition format). */
async function cpuSeconds(apiUrl: string): Promise<number> {
  const text = await (await fetch(`${apiUrl}/metrics`)).text();
  return Number(/^process_cpu_seconds_total (\S+)/m.exec(text)![1]);
}

/**
 * `runs` runs, `parallel` in flight, each lane creating its next run when its last completed (read from Redis by the
 * bench, not the product's API, so waiting costs the product nothing).
 */
async function drive(
  apiUrl: string,
  admin: Redis,
  prefix: string,
  body: string,
  runs: number,
  parallel: number,
): Promise<void> {
  const keys = new DeploymentKeys(prefix);
  const agent = new http.Agent({ keepAlive: true });
  let next = 0;
  await Promise.all(
    Array.from({ length: parallel }, async () => {
      while (next < runs) {
        next++;
        const { id } = (await postJson(`${apiUrl}/v1/runs`, body, agent)) as { id: string };
        for (;;) {
          const status = await admin.hget(keys.run(id).state, 'status');
          if (status === 'completed') break;
          if (status === 'failed' || status === 'cancelled') throw new Error(`bench run ${id} ${status}`);
          await new Promise((r) => setTimeout(r, 5));
        }
      }
    }),
  );
  agent.destroy();
}

/**
 * Tracing's cost (SPEC §8): the product (every role, one process of its own) runs the same load with tracing off, on
 * (OTLP http/protobuf and http/json to a counting receiver), and — given a baseline build's CLI — as that build;
 * modes alternate within each round, each in a fresh process that first warms up.
 */
export async function tracingCost(
  ctx: TracingCostContext,
  o: { runs: number; parallel: number; warmup: number; rounds: number; baselineCli?: string },
): Promise<TracingFigure[]> {
  const receiver = await countingReceiver();
  const body = JSON.stringify({
    input: 'trace me',
    model: MODELS.openai,
    tools: ['noop'],
    limits: { maxIterations: ctx.iterations + 1 },
  });
  const modes: Array<{ mode: string; env: Record<string, string>; cli?: string }> = [
    { mode: 'off', env: {} },
    {
      mode: 'on, http/protobuf',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf' },
    },
    {
      mode: 'on, http/json',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' },
    },
    ...(o.baselineCli ? [{ mode: 'baseline build (before tracing)', env: {}, cli: o.baselineCli }] : []),
  ];
  const figures = new Map(
    modes.map((m) => [
      m.mode,
      {
        mode: m.mode,
        cpuMsPerIteration: [] as number[],
        bytesPerIteration: 0,
        exportsPerSecond: 0,
        iterationsPerSecond: [] as number[],
      },
    ]),
  );
  try {
    for (let round = 0; round < o.rounds; round++) {
      const order = round % 2 ? [...modes].reverse() : modes;
      for (const m of order) {
        const prefix = `bench-tracing-${round}-${m.mode.replace(/\W+/g, '-')}`;
        const bytesBefore = receiver.bytes();
        const proc = await startServeProcess(
          {
            REDIS_URL: ctx.redisUrl,
            AGENTLOOP_PREFIX: prefix,
            AGENTLOOP_PORT: '0',
            AGENTLOOP_HOST: '127.0.0.1',
            AGENTLOOP_AUTH: 'disabled',
            AGENTLOOP_METRICS_PORT: '0',
            AGENTLOOP_TOOL_MODULES: ctx.toolsModule,
            OPENAI_API_KEY: 'sk-bench',
            OPENAI_BASE_URL: `${ctx.mockUrl}/v1`,
            LOG_LEVEL: 'error',
            ...m.env,
          },
          { cli: m.cli },
        );
        await drive(proc.apiUrl, ctx.admin, prefix, body, o.warmup, o.parallel);
        const [cpu0, req0, t0] = [await cpuSeconds(proc.apiUrl), receiver.requests(), performance.now()];
        await drive(proc.apiUrl, ctx.admin, prefix, body, o.runs, o.parallel);
        const seconds = (performance.now() - t0) / 1000;
        const cpu = (await cpuSeconds(proc.apiUrl)) - cpu0;
        await proc.stop(); // flushes what the batch processor still holds
        const f = figures.get(m.mode)!;
        const iterations = o.runs * ctx.iterations;
        f.cpuMsPerIteration.push((cpu * 1000) / iterations);
        f.iterationsPerSecond.push(iterations / seconds);
        // over the process's life (warm-up included: its spans leave in batches that straddle the window), all flushed by the stop
        f.bytesPerIteration = (receiver.bytes() - bytesBefore) / ((o.runs + o.warmup) * ctx.iterations);
        f.exportsPerSecond = (receiver.requests() - req0) / seconds;
      }
    }
  } finally {
    await receiver.close();
  }
  return [...figures.values()];
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export function tracingCostLines(
  figures: TracingFigure[],
  o: { runs: number; parallel: number; iterations: number },
): string[] {
  const off = median(figures[0]!.cpuMsPerIteration);
  return [
    `tracing cost: ${o.runs} runs × ${o.iterations} iterations per window, ${o.parallel} in flight, every role in one process; CPU of that process (process_cpu_seconds_total)`,
    ...figures.map((f) => {
      const cpu = median(f.cpuMsPerIteration);
      const delta =
        f === figures[0] ? '' : ` (${cpu >= off ? '+' : ''}${(((cpu - off) / off) * 100).toFixed(1)}% vs off)`;
      return `  ${f.mode.padEnd(32)} CPU ${cpu.toFixed(3)} ms/iteration${delta} [windows: ${f.cpuMsPerIteration.map((x) => x.toFixed(3)).join(', ')}], ${median(f.iterationsPerSecond).toFixed(0)} iterations/s, exported ${f.bytesPerIteration.toFixed(0)} bytes/iteration`;
    }),
  ];
}
