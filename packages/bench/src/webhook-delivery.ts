import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Redis } from 'ioredis';
import { serve } from '@agentloop/cli/serve';
import { productEnv, type LoopEnv } from './product-loop.js';
import { MODELS } from './providers.js';
import { percentile } from './stats.js';

export interface WebhookDeliveryFigure {
  runs: number;
  /** From the first run's end to the last delivery received, deliveries per second. */
  perSecond: number;
  /** From a run's end (its run.completed event's time) to its delivery's arrival at the receiver, ms. */
  p50: number;
  p99: number;
}

/**
 * Webhook delivery (issue 22): `runs` runs with `notify` (run.completed only) created at once — each the bench's
 * usual run (four tool calls, then the answer) — so they finish close together; a local receiver answers 204 and notes when each delivery arrives.
 * Throughput over the burst, and the latency from each run's end (the event's `at`) to its delivery's arrival. All
 * roles in one process, as `pnpm agentloop serve` runs them.
 */
export async function webhookDelivery(
  ctx: Pick<LoopEnv, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency' | 'iterations'>,
  admin: Redis,
  runs: number,
): Promise<WebhookDeliveryFigure> {
  const latencies: number[] = [];
  const arrivals: number[] = [];
  let done: () => void = () => undefined;
  const all = new Promise<void>((r) => (done = r));
  const receiver = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      const at = Date.now();
      const event = (JSON.parse(body) as { data: { event: { at: string } } }).data.event;
      latencies.push(at - Date.parse(event.at));
      arrivals.push(at);
      res.writeHead(204).end();
      if (latencies.length === runs) done();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const prefix = 'bench-webhooks';
  const secret = Buffer.from('bench-webhook-secret-bench-webhook-secret').toString('base64');
  const proc = await serve({
    roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
    env: {
      ...productEnv(ctx, prefix),
      AGENTLOOP_METRICS_PORT: '0',
      AGENTLOOP_AUTH: 'required',
      AGENTLOOP_API_KEYS: 'kw=w',
      AGENTLOOP_WEBHOOK_SECRETS: `w=whsec_${secret}`,
      AGENTLOOP_WEBHOOK_ALLOWED_URLS: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`,
    },
  });
  try {
    const body = JSON.stringify({
      input: 'call the tool a few times, then answer',
      model: MODELS.openai,
      tools: ['noop'],
      limits: { maxIterations: ctx.iterations + 1 },
      notify: { url, events: ['run.completed'] },
    });
    for (let i = 0; i < runs; i += 100)
      await Promise.all(
        Array.from({ length: Math.min(100, runs - i) }, async () => {
          const res = await fetch(`${proc.apiUrl}/v1/runs`, {
            method: 'POST',
            headers: { authorization: 'Bearer kw', 'content-type': 'application/json' },
            body,
          });
          if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
        }),
      );
    await Promise.race([
      all,
      new Promise((_, reject) =>
        setTimeout(() => reject(new Error(`only ${latencies.length} of ${runs} webhooks arrived`)), 120_000),
      ),
    ]);
    const first = Math.min(...arrivals);
    const last = Math.max(...arrivals);
    return {
      runs,
      perSecond: runs / Math.max(0.001, (last - first) / 1000),
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
    };
  } finally {
    await proc.stop();
    receiver.close();
    await admin.eval(`for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end`, 0, `${prefix}*`);
  }
}

export const webhookDeliveryLines = (f: WebhookDeliveryFigure): string[] => [
  `webhook delivery: ${f.runs} runs with notify finishing at once, one local receiver (204)`,
  `  ${f.perSecond.toFixed(0)} deliveries/s; from a run's end to its delivery: p50 ${f.p50.toFixed(0)} ms, p99 ${f.p99.toFixed(0)} ms`,
];
