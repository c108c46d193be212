import { contextWindowOf } from '@agentloop/llm';
import { QUEUES, advanceJobId, expireJobId, toolJobId, type RunRequest, type ToolJob } from '@agentloop/protocol';
import { DEFAULT_JOB_OPTIONS, type QueueSet, type RunState } from '@agentloop/runtime';

export interface CallToRun {
  callId: string;
  name: string;
  arguments: string;
  pool: string;
}

/** min(context.toolResultMaxTokens, a quarter of the context window) */
export function maxResultTokens(request: RunRequest): number {
  return Math.max(100, Math.min(request.context.toolResultMaxTokens, Math.floor(contextWindowOf(request.model) / 4)));
}

/**
 * Publishes what follows a checkpoint: the next iteration's job with the calls to run as its children (one flow),
 * or alone. A parked run gets its expiry job instead of a lone next job (its continuation is published by the
 * last decision), and the calls that need no decision still run at once, under the next iteration's job. Job ids
 * are fixed, so publishing twice is harmless.
 */
export class Dispatcher {
  constructor(private readonly queues: QueueSet) {}

  async dispatch(st: RunState, k: number, calls: CallToRun[], pausedUntil: number | null = null): Promise<void> {
    const next = { runId: st.id, iteration: k + 1 };
    const parentOpts = { ...DEFAULT_JOB_OPTIONS, jobId: advanceJobId(st.id, k + 1) };
    if (pausedUntil !== null) {
      await this.queues.orchestrator.add('expire', { runId: st.id, iteration: k }, { ...DEFAULT_JOB_OPTIONS, jobId: expireJobId(st.id, k), delay: Math.max(0, pausedUntil - Date.now()) });
      if (!calls.length) return;
    } else if (!calls.length) {
      await this.queues.orchestrator.add('advance', next, parentOpts);
      return;
    }
    const cap = maxResultTokens(st.request);
    await this.queues.flows.add({
      name: 'advance',
      queueName: QUEUES.orchestrator,
      data: next,
      opts: parentOpts,
      children: calls.map((c) => ({
        name: 'tool',
        queueName: QUEUES.tools(c.pool),
        data: { runId: st.id, tenantId: st.tenant, callId: c.callId, name: c.name, arguments: c.arguments, iteration: k, maxResultTokens: cap } satisfies ToolJob,
        opts: { ...DEFAULT_JOB_OPTIONS, jobId: toolJobId(st.id, c.callId), ignoreDependencyOnFailure: true },
      })),
    });
  }
}
