import type { Redis } from 'ioredis';
import { serve } from '@agentloop/cli/serve';
import { productEnv, type LoopEnv } from './product-loop.js';
import { MODELS } from './providers.js';
import { commandCount } from './stats.js';

export interface ThreadCostFigure {
  /** Runs of the measured sequence. */
  runs: number;
  /** Per run: Redis commands (scripts' inner commands included), bytes to and from Redis, and the Redis memory it keeps. */
  alone: { commands: number; bytesIn: number; bytesOut: number; memory: number };
  threaded: { commands: number; bytesIn: number; bytesOut: number; memory: number };
  /** The last run's transcript length in messages, in the thread (it grows with the thread: its conversation). */
  lastTranscript: number;
}

/**
 * The cost of a thread (issue 22): `runs` runs one after another, each the bench's usual run (four tool calls, then the
 * answer), once as separate runs and once all in one thread (each run starting once the previous one ended, seeing its
 * messages). Redis commands and bytes per run over the whole sequence, and the memory the runs leave behind. A
 * thread's run carries the thread's conversation before its input, so its later runs cost more to store and to send
 * to the model: the figure says how much.
 */
export async function threadCost(
  ctx: Pick<LoopEnv, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency' | 'iterations'>,
  admin: Redis,
  runs: number,
): Promise<ThreadCostFigure> {
  const measure = async (threadId: string | null) => {
    const prefix = `bench-thread-${threadId ? 't' : 'n'}`;
    const proc = await serve({
      roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
      env: { ...productEnv(ctx, prefix), AGENTLOOP_METRICS_PORT: '0' },
    });
    try {
      const body = JSON.stringify({
        input: 'call the tool a few times, then answer',
        model: MODELS.openai,
        tools: ['noop'],
        limits: { maxIterations: ctx.iterations + 1 },
        ...(threadId ? { threadId } : {}),
      });
      const memBefore = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0);
      await admin.config('RESETSTAT');
      let last = '';
      for (let i = 0; i < runs; i++) {
        const res = await fetch(`${proc.apiUrl}/v1/runs`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
        });
        if (res.status !== 202) throw new Error(`POST /v1/runs: ${res.status} ${await res.text()}`);
        last = ((await res.json()) as { id: string }).id;
        for (;;) {
          const snap = (await (await fetch(`${proc.apiUrl}/v1/runs/${last}`)).json()) as { status: string };
          if (['completed', 'failed', 'cancelled'].includes(snap.status)) break;
          await new Promise((r) => setTimeout(r, 10));
        }
        if (threadId) await new Promise((r) => setTimeout(r, 50)); // the thread's relay step after the run's end
      }
      const commands = await commandCount(admin);
      const stats = await admin.info('stats');
      const bytes = (field: string) => Number(new RegExp(`^${field}:(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
      const memAfter = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))?.[1] ?? 0);
      const transcript =
        ((await (await fetch(`${proc.apiUrl}/v1/runs/${last}?include=history`)).json()) as { history?: unknown[] })
          .history?.length ?? 0;
      return {
        figure: {
          commands: commands / runs,
          bytesIn: bytes('total_net_input_bytes') / runs,
          bytesOut: bytes('total_net_output_bytes') / runs,
          memory: (memAfter - memBefore) / runs,
        },
        transcript,
      };
    } finally {
      await proc.stop();
      // DEL, not UNLINK: memory freed in the background would be counted against the next measurement
      await admin.eval(`for _, k in ipairs(redis.call('KEYS', ARGV[1])) do redis.call('DEL', k) end`, 0, `${prefix}*`);
    }
  };
  const alone = await measure(null);
  const threaded = await measure('bench-thread');
  return { runs, alone: alone.figure, threaded: threaded.figure, lastTranscript: threaded.transcript };
}

export const threadCostLines = (f: ThreadCostFigure): string[] => {
  const row = (name: string, x: ThreadCostFigure['alone']) =>
    `  ${name.padEnd(10)} ${x.commands.toFixed(0).padStart(9)} ${(x.bytesIn / 1024).toFixed(1).padStart(9)} ${(x.bytesOut / 1024).toFixed(1).padStart(9)} ${(x.memory / 1024).toFixed(1).padStart(10)}`;
  return [
    `cost of a thread: ${f.runs} runs one after another, alone and in one thread (the last run's history: ${f.lastTranscript} messages)`,
    '  per run     commands  KB to Redis  KB from  KB kept',
    row('alone', f.alone),
    row('threaded', f.threaded),
    `  threaded ÷ alone: commands ${(f.threaded.commands / f.alone.commands).toFixed(2)}×, bytes to Redis ${(f.threaded.bytesIn / f.alone.bytesIn).toFixed(2)}×, kept ${(f.threaded.memory / Math.max(1, f.alone.memory)).toFixed(2)}×`,
  ];
};
