import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';
import type { RunStore } from '../run-store.js';

/** A minimal run request, as the store tests create their runs with. */
export const TEST_REQUEST = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });

/** A checkpoint's usage totals after one model call of one prompt and one completion token. */
export const TEST_TOTALS = {
  promptTokens: 1,
  completionTokens: 1,
  reasoningTokens: 0,
  cachedTokens: 0,
  totalTokens: 2,
  costUsd: 0,
  llmCalls: 1,
};

/** A run created with TEST_REQUEST and started: at iteration 1's model call, owned by `owner`; `events`: its start's. */
export async function runInModelCall(store: RunStore, events: NewEvent[], owner?: string): Promise<string> {
  const runId = newRunId();
  await store.create({
    runId,
    tenant: 'T',
    request: TEST_REQUEST,
    messages: [{ role: 'user', content: 'hi' }],
    bodyHash: 'h',
  });
  await store.startIteration(runId, {
    iteration: 1,
    expectPhase: 'queued',
    expectPendingFinal: '',
    callMode: 'tools',
    events,
    owner,
  });
  return runId;
}
