import http from 'node:http';
import { Redis } from 'ioredis';
import { RoundTripProbe } from './raw-bullmq.js';
import { percentile } from './stats.js';
import { startMockProcess, startServeProcess } from './processes.js';

/** Idle time before each resume sample (the raw round trip it is compared with is paced the same way). */
export const RESUME_GAP_MS = Number(process.env.BENCH_RESUME_GAP_MS ?? 20);
/**
 * Resumes before the first measurement (a fresh process JIT-compiles its hot paths during its first few hundred;
 * a long-running one has): reported separately as the cold figure.
 */
const WARMUP_RESUMES = Number(process.env.BENCH_RESUME_WARMUP ?? 500);

/** A backend's HTTP client: one kept-alive connection, no per-request setup beyond writing the request. */
function keepAlivePost(baseUrl: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const base = new URL(baseUrl);
  return (path: string, body: unknown) =>
    new Promise<any>((resolve, reject) => {
      const data = JSON.stringify(body);
      const req = http.request(
        {
          host: base.hostname,
          port: base.port,
          path,
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => resolve(JSON.parse(text)));
        },
      );
      req.on('error', reject);
      req.end(data);
    });
}

/**
 * Resume latency: from the decision request to the first model request of the resumed iteration (its arrival at the
 * model server), with `sizes[i]` runs parked. Each sample is paired with a raw BullMQ round trip taken just before it,
 * after the same idle time, so the ratio compares like with like. Three processes, as deployed: this client, `agentloop serve`, and the
 * mock model; both instants are read from the machine's monotonic clock (process.hrtime), shared by all processes.
 */
export async function resumeLatency(
  redisUrl: string,
  admin: Redis,
  toolsModule: string,
  sizes: number[],
  samples: number,
) {
  // the baseline, sampled between the resumes: the same pacing, the same moment, the same state of the machine
  const probeRedis = new Redis(redisUrl, { maxRetriesPerRequest: null });
  const probe = new RoundTripProbe(probeRedis, 'bench-resume-rt');
  await probe.ready();
  const arrivals = new Map<string, bigint>();
  const waiters = new Map<string, () => void>();
  const mock = await startMockProcess(['resume'], (line) => {
    const m = /^arrival (\S+) (\d+)$/.exec(line);
    if (!m) return;
    arrivals.set(m[1]!, BigInt(m[2]!));
    waiters.get(m[1]!)?.();
  });
  const prefix = 'bench-resume';
  const proc = await startServeProcess({
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
  });
  const post = keepAlivePost(proc.apiUrl);
  let next = 0;
  const markers = new Map<string, string>(); // run id → the [marker] in its input
  const parked: string[] = []; // parked and not resumed yet
  const results: Array<{ parked: number; p50: number; p99: number; rawP50: number; coldP50?: number }> = [];
  /** Creates runs until `count` are parked (each pauses on its first call), and waits until they are. */
  const parkUntil = async (count: number) => {
    while (parked.length < count) {
      const batch = Array.from({ length: Math.min(200, count - parked.length) }, () => next++);
      parked.push(
        ...(await Promise.all(
          batch.map(async (i) => {
            const id = (
              await post('/v1/runs', {
                input: `go [r${i}]`,
                model: { provider: 'openai', name: 'gpt-4o-mini' },
                tools: ['notify'],
              })
            ).id as string;
            markers.set(id, `r${i}`);
            return id;
          }),
        )),
      );
    }
    while ((await admin.zcard(`${prefix}:parked`)) < count) await new Promise((r) => setTimeout(r, 200));
  };
  /** Resumes one parked run; returns [resume latency, the raw round trip sampled just before it] in seconds. */
  const resumeOne = async (): Promise<[number, number]> => {
    const runId = parked.pop()!;
    const run = (await (await fetch(`${proc.apiUrl}/v1/runs/${runId}`)).json()) as {
      pending: Array<{ callId: string }>;
    };
    const marker = markers.get(runId)!;
    await new Promise((r) => setTimeout(r, RESUME_GAP_MS)); // let the previous resume's iteration settle
    const rawSample = await probe.sample();
    await new Promise((r) => setTimeout(r, RESUME_GAP_MS));
    const arrived = new Promise<void>((r) => waiters.set(marker, r));
    const t0 = process.hrtime.bigint();
    await post(`/v1/runs/${runId}/decisions`, {
      decisions: [{ callId: run.pending[0]!.callId, action: 'deny', reason: 'bench' }],
    });
    if (!arrivals.has(marker)) await arrived;
    return [Number(arrivals.get(marker)! - t0) / 1e9, rawSample];
  };
  try {
    for (const [n, size] of sizes.entries()) {
      // the first resumes of a fresh process pay for JIT compilation and connection set-up: not what is measured
      const warmup = n === 0 ? WARMUP_RESUMES : 0;
      await parkUntil(size + samples + warmup);
      const cold: number[] = [];
      for (let i = 0; i < warmup; i++) cold.push((await resumeOne())[0]);
      const latencies: number[] = [];
      const raw: number[] = [];
      for (let i = 0; i < samples; i++) {
        const [latency, rawSample] = await resumeOne();
        latencies.push(latency);
        raw.push(rawSample);
      }
      results.push({
        parked: size,
        p50: percentile(latencies, 50),
        p99: percentile(latencies, 99),
        rawP50: percentile(raw, 50),
        ...(cold.length ? { coldP50: percentile(cold.slice(0, 100), 50) } : {}),
      });
    }
  } finally {
    await proc.stop();
    mock.child.kill('SIGTERM');
    await probe.close();
    probeRedis.disconnect();
  }
  return results;
}
