import type { ModelResponse, PriceTable } from '@agentloop/llm';
import type { Metrics } from '@agentloop/runtime';

const TOKEN_KINDS = [
  ['prompt', 'promptTokens'],
  ['completion', 'completionTokens'],
  ['reasoning', 'reasoningTokens'],
  ['cached', 'cachedTokens'],
] as const;

/** A recorded model call in the metrics, labelled with the model that answered (a fallback's, when one did). */
export function countResponse(metrics: Metrics, prices: PriceTable, res: ModelResponse): void {
  const u = res.usage;
  const model = prices.metricLabel(res.provider, res.model);
  metrics.loopIterations.inc({ provider: res.provider, model });
  for (const [kind, field] of TOKEN_KINDS)
    if (u[field]) metrics.llmTokens.inc({ provider: res.provider, model, kind }, u[field]);
}
