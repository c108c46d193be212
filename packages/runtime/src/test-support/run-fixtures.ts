import { RunRequestSchema } from '@agentloop/protocol';

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
