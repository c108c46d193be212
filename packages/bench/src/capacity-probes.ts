import fs from 'node:fs';
import { QueueEvents } from 'bullmq';
import type { Redis } from 'ioredis';
import { percentile } from './stats.js';

const streamMs = (id: string) => Number(id.split('-')[0]);

/** A Prometheus sample's value from a /metrics text. */
export async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

/** The V8 heap in use and its young generation's share, from one scrape. */
export async function heapSpaces(url: string): Promise<{ used: number; young: number }> {
  const lines = (await (await fetch(url)).text()).split('\n');
  const value = (prefix: string) => {
    const line = lines.find((l) => l.startsWith(prefix));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
  };
  return {
    used: value('nodejs_heap_size_used_bytes '),
    young:
      value('nodejs_heap_space_size_used_bytes{space="new"}') +
      (value('nodejs_heap_space_size_used_bytes{space="new_large_object"}') || 0),
  };
}

/** BENCH_CAPACITY_SLOW_LOG=file: each job that waited 20 ms or more (queue, job id, ready at, wait), to find bursts. */
export const SLOW_LOG = process.env.BENCH_CAPACITY_SLOW_LOG;

/** Job ready → taken, per queue, from BullMQ's event stream (both stamps from Redis' clock). */
export function schedulingProbe(redis: Redis, prefix: string, queue: string) {
  const events = new QueueEvents(queue, { connection: redis.duplicate({ maxRetriesPerRequest: null }), prefix });
  const ready = new Map<string, number>();
  const delays: number[] = [];
  /** Jobs of a run's first iteration (`<run>-1`): the burst of runs created at once, apart. */
  const firstDelays: number[] = [];
  events.on('waiting', ({ jobId }, id) => ready.set(jobId, streamMs(id)));
  events.on('active', ({ jobId }, id) => {
    const at = ready.get(jobId);
    if (at !== undefined) {
      (/-1$/.test(jobId) && queue === 'orchestrator' ? firstDelays : delays).push(streamMs(id) - at);
      if (SLOW_LOG && streamMs(id) - at >= 20)
        fs.appendFileSync(SLOW_LOG, `${queue} ${jobId} ${at} ${streamMs(id) - at}\n`);
    }
    ready.delete(jobId);
  });
  const fig = (d: number[]) => ({ n: d.length, p50: percentile(d, 50), p99: percentile(d, 99) });
  return {
    ready: () => events.waitUntilReady(),
    reset: () => [delays, firstDelays].forEach((d) => (d.length = 0)),
    figures: () => fig(delays),
    firstFigures: () => fig(firstDelays),
    close: () => events.close(),
  };
}
