import http from 'node:http';
import { serve, type RunningProcess } from '@agentloop/cli/serve';
import { postJson } from './durable-floor-loop.js';
import { MODELS, type Provider } from './providers.js';
import type { Loop } from './loop-window.js';
import type { IterationTiming } from './iteration-latency.js';

/** Where a bench loop finds the bench's Redis, mock model and tool module, and its workload. */
export interface LoopEnv {
  redisUrl: string;
  mockUrl: string;
  toolsModule: string;
  /** The same tools with `noop` local (SPEC §6): the module of the `local` loop. */
  localToolsModule: string;
  /** Model calls per run (the mock's `tool-loop N`: N-1 with one no-op tool call, then the answer). */
  iterations: number;
  concurrency: { orchestrator: number; tools: number };
  prior: Array<{ role: string; content: string }>;
}

/** A conversation of `n` messages before the run's question (the bench's transcripts of 10 and 200 messages). */
export function priorConversation(n: number) {
  const msgs: Array<{ role: string; content: string }> = [];
  for (let i = 0; msgs.length < n - 1; i++) {
    msgs.push({ role: 'user', content: `earlier question ${i}: ${'lorem ipsum '.repeat(8)}` });
    msgs.push({ role: 'assistant', content: `earlier answer ${i}: ${'dolor sit amet '.repeat(8)}` });
  }
  msgs.push({ role: 'user', content: 'Now run the tool a few times and answer.' });
  return msgs.slice(-n);
}

/** The env of a product process (all roles) against the bench's Redis and mock. */
export function productEnv(
  ctx: Pick<LoopEnv, 'redisUrl' | 'mockUrl' | 'toolsModule' | 'concurrency'>,
  prefix: string,
): Record<string, string | undefined> {
  return {
    ...process.env,
    REDIS_URL: ctx.redisUrl,
    AGENTLOOP_PREFIX: prefix,
    AGENTLOOP_PORT: '0',
    AGENTLOOP_HOST: '127.0.0.1',
    AGENTLOOP_AUTH: 'disabled',
    AGENTLOOP_TOOL_MODULES: ctx.toolsModule,
    OPENAI_API_KEY: 'sk-bench',
    OPENAI_BASE_URL: `${ctx.mockUrl}/v1`,
    GEMINI_API_KEY: 'bench',
    GEMINI_BASE_URL: ctx.mockUrl,
    LOG_LEVEL: 'error',
    AGENTLOOP_ORCHESTRATOR_CONCURRENCY: String(ctx.concurrency.orchestrator),
    AGENTLOOP_TOOL_CONCURRENCY: String(ctx.concurrency.tools),
  };
}

/** The product, every role in this process: a run is created over HTTP and has answered after `iterations` iterations. */
export class ProductLoop implements Loop {
  iterations = 0;
  /** Each iteration's start and model call, as the orchestrator reports them (iteration-latency.ts). */
  onIterationTimed?: (t: IterationTiming) => void;
  private proc: RunningProcess | null = null;
  private readonly counts = new Map<string, number>();
  private readonly waiters = new Map<string, () => void>();
  private readonly agent = new http.Agent({ keepAlive: true });
  private readonly body: string;

  constructor(
    private readonly ctx: LoopEnv,
    private readonly prefix: string,
    provider: Provider,
    /** More environment of the product (a Redis Cluster, partitions). */
    private readonly extraEnv: Record<string, string> = {},
  ) {
    this.body = JSON.stringify({
      input: ctx.prior,
      model: MODELS[provider],
      tools: ['noop'],
      limits: { maxIterations: ctx.iterations + 1 },
    });
  }

  async start(): Promise<void> {
    this.proc = await serve({
      roles: ['api', 'orchestrator', 'tool-runner', 'compressor'],
      env: { ...productEnv(this.ctx, this.prefix), ...this.extraEnv },
      onIterationTimed: (t) => {
        this.iterations++;
        this.onIterationTimed?.(t);
        const n = (this.counts.get(t.runId) ?? 0) + 1;
        this.counts.set(t.runId, n);
        if (n === this.ctx.iterations) this.waiters.get(t.runId)?.();
      },
    });
  }

  async run(): Promise<void> {
    const { id } = (await postJson(`${this.proc!.apiUrl}/v1/runs`, this.body, this.agent)) as { id: string };
    if (this.counts.get(id) !== this.ctx.iterations) await new Promise<void>((r) => this.waiters.set(id, r));
    this.waiters.delete(id);
    this.counts.delete(id);
  }

  async close(): Promise<void> {
    this.agent.destroy();
    await this.proc?.stop();
  }
}
