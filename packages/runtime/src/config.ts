import { z } from 'zod';
import { TENANT_ID_RE, UrlPrefixes } from '@agentloop/protocol';
import type { ProviderSettings } from '@agentloop/llm';
import {
  ModelPricesSchema,
  ProviderLimitsSchema,
  TenantLimitsSchema,
  type ProviderLimits,
  type TenantLimit,
} from './limits-config.js';

export * from './limits-config.js';
import { partitionPrefixes } from './partition-names.js';
import { keyPrefix, prefixProblem, redisTargetFromEnv, type RedisTarget } from './redis-target.js';
import { EnvSchema } from './env-schema.js';

const PoolPickupSchema = z.record(
  z.string().regex(/^(\*|[A-Za-z0-9_-]{1,64})$/, 'a pool name or *'),
  z.number().int().min(1000),
);

/** A JSON-valued variable, parsed and validated; a bad value stops the process with the variable's name and path. */
function parseJsonEnv<T>(name: string, raw: string, schema: z.ZodType<T>, example: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`invalid environment:\n  ${name}: not JSON (example: ${example})`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success)
    throw new Error(
      `invalid environment:\n${parsed.error.issues.map((i) => `  ${name}.${i.path.join('.')}: ${i.message}`).join('\n')}`,
    );
  return parsed.data;
}

const list = (v: string) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** An origin as a browser sends it in `Origin` (http(s)://host[:port], default port dropped), or null. */
export function corsOrigin(entry: string): string | null {
  if (!/^https?:\/\/[^/?#@\\\s]+$/i.test(entry)) return null;
  return URL.parse(entry)?.origin ?? null;
}

/** `tenantA=whsec_<base64>,…` → tenant → key bytes (the base64 after `whsec_`, decoded). A secret is never echoed. */
function webhookSecrets(raw: string): Map<string, Buffer> {
  const out = new Map<string, Buffer>();
  list(raw).forEach((pair, i) => {
    const eq = pair.indexOf('=');
    const tenant = pair.slice(0, Math.max(eq, 0));
    const b64 = pair.slice(eq + 1).replace(/^whsec_/, '');
    if (eq <= 0 || !TENANT_ID_RE.test(tenant) || !/^[A-Za-z0-9+/]+={0,2}$/.test(b64) || b64.length % 4 !== 0)
      throw new Error(`invalid environment:\n  AGENTLOOP_WEBHOOK_SECRETS: entry ${i + 1} is not tenant=whsec_<base64>`);
    out.set(tenant, Buffer.from(b64, 'base64'));
  });
  return out;
}

/** A prefix list as UrlPrefixes reads it, or the process stops naming the variable. */
function urlPrefixes(variable: string, raw: string): string[] {
  try {
    new UrlPrefixes(list(raw), variable);
  } catch (e) {
    throw new Error(`invalid environment:\n  ${(e as Error).message}`);
  }
  return list(raw);
}

export interface Config {
  redisUrl: string;
  /** Where connections go (createRedis): REDIS_CLUSTER_NODES, else REDIS_SENTINELS, else REDIS_URL. */
  redis: RedisTarget;
  /** What every key and queue of the deployment starts with: AGENTLOOP_PREFIX, in cluster mode as its hash tag (keyPrefix). */
  prefix: string;
  /** Each partition's prefix (partitionPrefixes), partition 0's being `prefix`: AGENTLOOP_PARTITIONS of them. */
  partitionPrefixes: string[];
  /** AGENTLOOP_PREFIX as set: the name partitionPrefix derives every partition's prefix from. */
  plainPrefix: string;
  port: number;
  metricsPort: number;
  host: string;
  apiKeys: Map<string, string>;
  authRequired: boolean;
  toolModules: string[];
  /** Built-ins that run in the orchestrator (AGENTLOOP_LOCAL_TOOLS). */
  localTools: string[];
  /** AGENTLOOP_MCP_SERVERS as given (services/tool-runner/src/mcp/config.ts validates it). */
  mcpServers: string;
  /** AGENTLOOP_OPENAPI_TOOLS as given (services/tool-runner/src/openapi/config.ts validates it). */
  openapiTools: string;
  drainMs: number;
  lockMs: number;
  orchestratorConcurrency: number;
  toolConcurrency: number;
  reconcileMs: number;
  summaryDeadlineMs: number;
  /** Per pool ('*': every other pool), ms a call may wait for a runner. */
  poolPickupMs: Record<string, number>;
  llmAttempts: number;
  llmRetryBaseMs: number;
  llmMaxWaitMs: number;
  providerLimits: ProviderLimits;
  logLevel: string;
  modelBaseUrls: string[];
  modelKeyEnvs: string[];
  modelPrices: z.infer<typeof ModelPricesSchema>;
  tenantLimits: Record<string, TenantLimit>;
  /** Origins allowed to call the API from a browser (CORS), serialized as browsers send them; none by default. */
  corsOrigins: string[];
  consoleTraceUrl: string | null;
  runRetentionS: number;
  compressionModel: string | null;
  webhooks: {
    /** Tenant → the key its webhooks are signed with; a tenant without one cannot use `notify`. */
    secrets: Map<string, Buffer>;
    /** The first retry's delay; each later one doubles it. */
    retryBaseMs: number;
    /** URL prefixes a notify.url may use although it resolves to a private or loopback address. */
    allowedUrls: string[];
    /** How long one attempt may wait for its answer. */
    timeoutMs: number;
  };
  adminKey: string | null;
  adminWritable: boolean;
  /** What the model providers are configured with (keys included: never log it). */
  providers: ProviderSettings;
  /** Things the process should log once at start (settings it ignores). */
  warnings: string[];
}

/** The process configuration from the environment, validated: a bad value stops the process with a clear message. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')) as Record<
    string,
    string
  >;
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const apiKeys = new Map<string, string>();
  for (const pair of e.AGENTLOOP_API_KEYS.split(',')
    .map((s) => s.trim())
    .filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1)
      throw new Error(
        `invalid environment:\n  AGENTLOOP_API_KEYS: entry ${e.AGENTLOOP_API_KEYS.split(',').indexOf(pair) + 1} is not key=tenant`,
      ); // never print a key
    const tenant = pair.slice(eq + 1);
    if (!TENANT_ID_RE.test(tenant))
      throw new Error(
        `invalid environment:\n  AGENTLOOP_API_KEYS: tenant '${tenant.slice(0, 40)}' does not match [A-Za-z0-9_.@-]{1,128}`,
      );
    apiKeys.set(pair.slice(0, eq), tenant);
  }
  for (const name of list(e.AGENTLOOP_MODEL_KEY_ENVS))
    if (!/^[A-Z_][A-Z0-9_]*$/.test(name))
      throw new Error(
        `invalid environment:\n  AGENTLOOP_MODEL_KEY_ENVS: '${name}' is not an environment variable name`,
      );
  for (const origin of list(e.AGENTLOOP_CORS_ORIGINS))
    if (!corsOrigin(origin))
      throw new Error(
        `invalid environment:\n  AGENTLOOP_CORS_ORIGINS: '${origin.slice(0, 200)}' is not an origin (http(s)://host[:port], without a path, not even /)`,
      );
  const redis = redisTargetFromEnv(cleaned, e.REDIS_URL);
  const badPrefix = prefixProblem(e.AGENTLOOP_PREFIX, redis);
  if (badPrefix) throw new Error(`invalid environment:\n  ${badPrefix}`);
  return {
    redisUrl: e.REDIS_URL,
    redis,
    prefix: keyPrefix(e.AGENTLOOP_PREFIX, redis),
    partitionPrefixes: partitionPrefixes(e.AGENTLOOP_PREFIX, redis, e.AGENTLOOP_PARTITIONS),
    plainPrefix: e.AGENTLOOP_PREFIX,
    port: e.AGENTLOOP_PORT,
    metricsPort: e.AGENTLOOP_METRICS_PORT,
    host: e.AGENTLOOP_HOST,
    apiKeys,
    authRequired: e.AGENTLOOP_AUTH === 'required',
    toolModules: e.AGENTLOOP_TOOL_MODULES.split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    localTools: list(e.AGENTLOOP_LOCAL_TOOLS),
    mcpServers: e.AGENTLOOP_MCP_SERVERS,
    openapiTools: e.AGENTLOOP_OPENAPI_TOOLS,
    drainMs: e.AGENTLOOP_DRAIN_MS,
    lockMs: e.AGENTLOOP_LOCK_MS,
    orchestratorConcurrency: e.AGENTLOOP_ORCHESTRATOR_CONCURRENCY,
    toolConcurrency: e.AGENTLOOP_TOOL_CONCURRENCY,
    reconcileMs: e.AGENTLOOP_RECONCILE_MS,
    summaryDeadlineMs: e.AGENTLOOP_SUMMARY_DEADLINE_MS,
    poolPickupMs: /^\d+$/.test(e.AGENTLOOP_POOL_PICKUP_MS)
      ? { '*': Number(e.AGENTLOOP_POOL_PICKUP_MS) }
      : {
          '*': 300_000,
          ...parseJsonEnv(
            'AGENTLOOP_POOL_PICKUP_MS',
            e.AGENTLOOP_POOL_PICKUP_MS,
            PoolPickupSchema,
            '{"*":300000,"gpu":900000}',
          ),
        },
    llmAttempts: e.AGENTLOOP_LLM_ATTEMPTS,
    llmRetryBaseMs: e.AGENTLOOP_LLM_RETRY_BASE_MS,
    llmMaxWaitMs: e.AGENTLOOP_LLM_MAX_WAIT_MS,
    providerLimits: parseJsonEnv(
      'AGENTLOOP_PROVIDER_LIMITS',
      e.AGENTLOOP_PROVIDER_LIMITS,
      ProviderLimitsSchema,
      '{"openai":{"concurrency":50,"rpm":3000}}',
    ) as ProviderLimits,
    modelBaseUrls: urlPrefixes('AGENTLOOP_MODEL_BASE_URLS', e.AGENTLOOP_MODEL_BASE_URLS),
    modelKeyEnvs: list(e.AGENTLOOP_MODEL_KEY_ENVS),
    modelPrices: parseJsonEnv(
      'AGENTLOOP_MODEL_PRICES',
      e.AGENTLOOP_MODEL_PRICES,
      ModelPricesSchema,
      '{"openai/gpt-x":{"input":1,"output":4}}',
    ),
    tenantLimits: parseJsonEnv(
      'AGENTLOOP_TENANT_LIMITS',
      e.AGENTLOOP_TENANT_LIMITS,
      TenantLimitsSchema,
      '{"*":{"requestsPerSecond":50,"burst":100,"activeRuns":1000,"streams":200}}',
    ),
    corsOrigins: [...new Set(list(e.AGENTLOOP_CORS_ORIGINS).map((o) => corsOrigin(o)!))],
    consoleTraceUrl: e.AGENTLOOP_CONSOLE_TRACE_URL ?? null,
    runRetentionS: e.AGENTLOOP_RUN_RETENTION_S,
    compressionModel: e.AGENTLOOP_COMPRESSION_MODEL ?? null,
    webhooks: {
      secrets: webhookSecrets(e.AGENTLOOP_WEBHOOK_SECRETS),
      retryBaseMs: e.AGENTLOOP_WEBHOOK_RETRY_BASE_MS,
      allowedUrls: urlPrefixes('AGENTLOOP_WEBHOOK_ALLOWED_URLS', e.AGENTLOOP_WEBHOOK_ALLOWED_URLS),
      timeoutMs: e.AGENTLOOP_WEBHOOK_TIMEOUT_MS,
    },
    logLevel: e.LOG_LEVEL,
    adminKey: e.AGENTLOOP_ADMIN_KEY ?? null,
    adminWritable: e.AGENTLOOP_ADMIN_WRITE === 'true',
    providers: {
      openai: { apiKey: e.OPENAI_API_KEY, baseUrl: e.OPENAI_BASE_URL },
      google: { apiKey: e.GEMINI_API_KEY, baseUrl: e.GEMINI_BASE_URL },
      deepseek: { apiKey: e.DEEPSEEK_API_KEY, baseUrl: e.DEEPSEEK_BASE_URL },
      // only the variables the operator listed: a request's apiKeyEnv can reach nothing else
      modelKeys: new Map(
        list(e.AGENTLOOP_MODEL_KEY_ENVS).flatMap((name) => (cleaned[name] ? [[name, cleaned[name]] as const] : [])),
      ),
      httpClient: e.AGENTLOOP_HTTP_CLIENT,
      proxy: ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((k) => cleaned[k]),
      openaiCustomHeaders: e.OPENAI_CUSTOM_HEADERS,
    },
    warnings: [],
  };
}
