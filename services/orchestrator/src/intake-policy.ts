import type { RunRequest } from '@agentloop/protocol';
import type { EndpointPolicy, PriceTable } from '@agentloop/llm';
import type { ProviderCatalog, TenantLimiter } from '@agentloop/runtime';
import type { WebhookPolicy } from './webhooks/webhook-policy.js';

/** What the deployment lets a request use: endpoints and credentials, priced models, limits, providers, webhooks. */
export interface IntakePolicy {
  endpoints: EndpointPolicy;
  prices: PriceTable;
  limits: TenantLimiter | null;
  /** Which providers the orchestrators can call (absent: nothing is refused for it). */
  providers?: ProviderCatalog;
  /** Who may use `notify`, and where to (none: no tenant has a secret). */
  webhooks?: WebhookPolicy;
}

/**
 * What a valid request may still not do on this deployment: name an endpoint or credential the operator did not
 * allow (in `model` or any fallback), or set `maxCostUsd` with a model that has no price.
 */
export function policyIssues(
  req: RunRequest,
  policy: Pick<IntakePolicy, 'endpoints' | 'prices'>,
): Array<{ path: string[]; code: string; message: string }> {
  const issues: Array<{ path: string[]; code: string; message: string }> = [];
  const specs: Array<[string[], RunRequest['model']]> = [
    [['model'], req.model],
    ...req.fallbacks.map((f, i) => [['fallbacks', String(i)], f] as [string[], RunRequest['model']]),
  ];
  for (const [at, spec] of specs) {
    for (const i of policy.endpoints.issues(spec))
      issues.push({ path: [...at, ...i.path], code: 'not_allowed', message: i.message });
    if (req.limits.maxCostUsd !== null && !policy.prices.price(spec.provider, spec.name))
      issues.push({
        path: [...at, 'name'],
        code: 'unpriced_model',
        message: `limits.maxCostUsd needs a price for ${spec.provider}/${spec.name}: it is not in the built-in table or AGENTLOOP_MODEL_PRICES`,
      });
  }
  // not built yet: refused, never silently ignored
  return issues;
}
