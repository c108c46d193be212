/** The JSON-valued limit and price settings of the configuration (AGENTLOOP_PROVIDER_LIMITS, AGENTLOOP_TENANT_LIMITS, AGENTLOOP_MODEL_PRICES). */
import { z } from 'zod';

export const ProviderLimitSchema = z
  .object({
    /** Model calls in flight at once, across all orchestrators. */
    concurrency: z.number().int().min(1).optional(),
    /** Model calls started per minute, across all orchestrators. */
    rpm: z.number().positive().optional(),
    /** Calls that may start back to back before the rpm spacing applies [1]. */
    burst: z.number().int().min(1).default(1),
  })
  .strict();
export const ProviderLimitsSchema = z.partialRecord(
  z.enum(['openai', 'google', 'deepseek', 'openai-compatible']),
  ProviderLimitSchema,
);
export type ProviderLimit = z.infer<typeof ProviderLimitSchema>;
export type ProviderLimits = Partial<Record<string, ProviderLimit>>;

export const TenantLimitSchema = z
  .object({
    /** Authenticated requests per second (token bucket refill rate), shared by every api process. */
    requestsPerSecond: z.number().positive().optional(),
    /** Bucket size: requests that may arrive back to back [requestsPerSecond, at least 1]. */
    burst: z.number().int().min(1).optional(),
    /** Runs queued, running or paused at once. */
    activeRuns: z.number().int().min(0).optional(),
    /** Event streams (GET /v1/runs/:id/events) open at once, across every api process. */
    streams: z.number().int().min(0).optional(),
  })
  .strict();
export const TenantLimitsSchema = z.record(z.string(), TenantLimitSchema);
export type TenantLimit = z.infer<typeof TenantLimitSchema>;

export const ModelPricesSchema = z.record(
  z.string().regex(/^[a-z-]+\/.+$/, 'keys are "provider/model"'),
  z.object({ input: z.number().min(0), output: z.number().min(0), cachedInput: z.number().min(0).optional() }).strict(),
);
