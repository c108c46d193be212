import { RunRequestSchema, newRunId, type NewEvent } from '@agentloop/protocol';
import type { RunStore } from '../run-store.js';
import type { CheckpointInput } from '../run-store-types.js';

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

/**
 * Iteration 1's checkpoint of a response that calls tool `a` once per id (in `pool`), none answered: the batch a
 * store test then records results for, starts over, or parks (`pause`).
 */
export function callsCheckpoint(ids: string[], pool: string, pause?: CheckpointInput['pause']): CheckpointInput {
  const meta = { name: 'a', arguments: '{}', display: '{}', pool, iteration: 1 };
  return {
    iteration: 1,
    message: { role: 'assistant', content: null, toolCalls: ids.map((id) => ({ id, name: 'a', arguments: '{}' })) },
    totals: TEST_TOTALS,
    iterationUsage: {},
    final: null,
    calls: ids.map((id) => ({ id, meta, outcome: null })),
    pendingFinal: '',
    repeat: { fingerprint: '', count: 0 },
    events: [],
    ...(pause ? { pause } : {}),
  };
}
