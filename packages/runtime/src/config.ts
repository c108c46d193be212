import { z } from 'zod';
import { TENANT_ID_RE, UrlPrefixes } from '@agentloop/protocol';
import type { ProviderSettings } from '@agentloop/llm';
import { unsupportedSettingProblems } from './unsupported-settings.js';
import { ModelPricesSchema, ProviderLimitsSchema, TenantLimitsSchema, type ProviderLimits, type TenantLimit } from './limits-config.js';

export * from './limits-config.js';
import { keyPrefix, prefixProblem, redisTargetFromEnv, type RedisTarget } from './redis-target.js';

const intFrom = (dflt: number, min = 0) => z.coerce.number().int().min(min).default(dflt);
const httpUrl = z.string().refine((v) => /^https?:$/.test(URL.parse(v)?.protocol ?? ''), 'an http(s) URL');

export const EnvSchema = z.object({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  AGENTLOOP_PREFIX: z.string().regex(/^[A-Za-z0-9_{}.-]{1,64}$/, 'letters, digits, _ . - and {} only').default('agentloop'),
  AGENTLOOP_PORT: intFrom(8080),
  AGENTLOOP_METRICS_PORT: intFrom(9464),
  AGENTLOOP_HOST: z.string().default('0.0.0.0'),
  AGENTLOOP_API_KEYS: z.string().default(''),
  AGENTLOOP_AUTH: z.enum(['required', 'disabled']).default('required'),
  AGENTLOOP_TOOL_MODULES: z.string().default(''),
  /** Built-in tools that run locally, in the orchestrator (SPEC §6 local tools). */
  AGENTLOOP_LOCAL_TOOLS: z.string().default(''),
  /** MCP servers (SPEC §6): a JSON array, or the path of a file holding one; the tool-runner parses it. */
  AGENTLOOP_MCP_SERVERS: z.string().default(''),
  /** OpenAPI tools (SPEC §6): a JSON array, or the path of a file holding one; the tool-runner parses it. */
  AGENTLOOP_OPENAPI_TOOLS: z.string().default(''),
  AGENTLOOP_DRAIN_MS: intFrom(25_000),
  /** BullMQ lock duration: how soon a job of a dead worker is taken over (stalled check runs at half of it). */
  AGENTLOOP_LOCK_MS: intFrom(30_000, 1000),
  AGENTLOOP_ORCHESTRATOR_CONCURRENCY: intFrom(50, 1),
  AGENTLOOP_TOOL_CONCURRENCY: intFrom(20, 1),
  /** How often the orchestrator re-publishes what a dead process left half done (a queued run without its first job,
   * a resume flipped but not published), and how old such a run must be. */
  AGENTLOOP_RECONCILE_MS: intFrom(10_000, 100),
  /** How long an iteration waits for its summary before it prunes instead (SPEC §3: 60 s). */
  AGENTLOOP_SUMMARY_DEADLINE_MS: intFrom(60_000, 100),
  /**
   * How long a tool call may wait for a runner of its pool before it is answered tool_error (retryable): a number of ms
   * for every pool, or JSON {"*":300000,"gpu":900000} (a pool that KEDA scales to zero needs time to start a runner).
   */
  AGENTLOOP_POOL_PICKUP_MS: z.string().default('300000'),
  AGENTLOOP_LLM_ATTEMPTS: intFrom(3, 1),
  AGENTLOOP_LLM_RETRY_BASE_MS: intFrom(500),
  /** Longest retry-after a worker waits out in place; a longer one moves the iteration job to delayed. */
  AGENTLOOP_LLM_MAX_WAIT_MS: intFrom(30_000),
  /** Per-provider limits shared by every orchestrator: JSON {"openai":{"concurrency":50,"rpm":3000,"burst":20}}. */
  AGENTLOOP_PROVIDER_LIMITS: z.string().default('{}'),
  /** Bull Board at /admin/queues on the api role, behind this key (off when unset). */
  AGENTLOOP_ADMIN_KEY: z.string().min(16, 'at least 16 characters').optional(),
  AGENTLOOP_ADMIN_WRITE: z.enum(['true', 'false']).default('false'),
  /** Base-URL prefixes a request's model.baseUrl may use, and env variable names its model.apiKeyEnv may name. */
  AGENTLOOP_MODEL_BASE_URLS: z.string().default(''),
  AGENTLOOP_MODEL_KEY_ENVS: z.string().default(''),
  /** JSON {"provider/model":{"input":USD,"output":USD,"cachedInput":USD}} per million tokens. */
  AGENTLOOP_MODEL_PRICES: z.string().default('{}'),
  /** Origins whose browser apps may call the API (CORS): scheme://host[:port], comma-separated. */
  AGENTLOOP_CORS_ORIGINS: z.string().default(''),
  /** The web console links a run's trace id here: an http(s) URL with {traceId} in it (e.g. a Jaeger UI's /trace/{traceId}). */
  AGENTLOOP_CONSOLE_TRACE_URL: z.string().regex(/^https?:\/\/[^\s]*\{traceId\}[^\s]*$/, 'must be an http(s) URL with {traceId} in it').optional(),
  /** JSON {"*":{"requestsPerSecond":50,"burst":100,"activeRuns":1000,"streams":200},"tenantA":{...}}. */
  AGENTLOOP_TENANT_LIMITS: z.string().default('{}'),
  /** The model the compressor summarizes with ("provider/name"; default: the run's own). */
  AGENTLOOP_COMPRESSION_MODEL: z.string().regex(/^(openai|google|deepseek|openai-compatible)\/[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$/, 'provider/name, e.g. openai/gpt-4o-mini').optional(),
  /** The OpenAI SDK's transport: node (node:http) or fetch. */
  AGENTLOOP_HTTP_CLIENT: z.enum(['node', 'fetch']).default('node'),
  /** How long a finished run stays readable (seconds). */
  AGENTLOOP_RUN_RETENTION_S: intFrom(604_800, 1),
  /** Gone: runs have one layout. Accepted as 3 only, so a deployment still set to 1 or 2 stops with a reason. */
  AGENTLOOP_RUN_LAYOUT: z
    .string()
    .refine((v) => v.trim() === '3', 'layouts 1 and 2 were removed: unset it, and drain runs of a build before 2026-12-03 first (docs/OPERATIONS.md)')
    .optional(),
  /** `tenantA=whsec_<base64>,…`: the tenants' webhook signing secrets (SPEC §2). */
  AGENTLOOP_WEBHOOK_SECRETS: z.string().default(''),
  AGENTLOOP_WEBHOOK_RETRY_BASE_MS: intFrom(5000, 1),
  /** How long one webhook attempt may wait for its answer (SPEC §2: 10 s). */
  AGENTLOOP_WEBHOOK_TIMEOUT_MS: intFrom(10_000, 100),
  /** URL prefixes webhooks may target even when they resolve to private or loopback addresses. */
  AGENTLOOP_WEBHOOK_ALLOWED_URLS: z.string().default(''),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** The providers' endpoints and keys (SPEC §1): read here only, handed to the providers as ProviderSettings. */
  OPENAI_API_KEY: z.string().optional(),
  OPENAI_BASE_URL: httpUrl.optional(),
  /** Read by the OpenAI SDK itself; the names are needed to switch those headers off for other endpoints. */
  OPENAI_CUSTOM_HEADERS: z.string().optional(),
  GEMINI_API_KEY: z.string().optional(),
  GEMINI_BASE_URL: httpUrl.optional(),
  DEEPSEEK_API_KEY: z.string().optional(),
  DEEPSEEK_BASE_URL: httpUrl.optional(),
});

const PoolPickupSchema = z.record(z.string().regex(/^(\*|[A-Za-z0-9_-]{1,64})$/, 'a pool name or *'), z.number().int().min(1000));

/** A JSON-valued variable, parsed and validated; a bad value stops the process with the variable's name and path. */
function parseJsonEnv<T>(name: string, raw: string, schema: z.ZodType<T>, example: string): T {
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw new Error(`invalid environment:\n  ${name}: not JSON (example: ${example})`);
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw new Error(`invalid environment:\n${parsed.error.issues.map((i) => `  ${name}.${i.path.join('.')}: ${i.message}`).join('\n')}`);
  return parsed.data;
}

const list = (v: string) => v.split(',').map((s) => s.trim()).filter(Boolean);

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
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== '')) as Record<string, string>;
  const unsupported = unsupportedSettingProblems(cleaned);
  if (unsupported.length) throw new Error(`unsupported configuration:\n${unsupported.map((l) => `  ${l}`).join('\n')}`);
  const parsed = EnvSchema.safeParse(cleaned);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`invalid environment:\n${lines.join('\n')}`);
  }
  const e = parsed.data;
  const apiKeys = new Map<string, string>();
  for (const pair of e.AGENTLOOP_API_KEYS.split(',').map((s) => s.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || eq === pair.length - 1) throw new Error(`invalid environment:\n  AGENTLOOP_API_KEYS: entry ${e.AGENTLOOP_API_KEYS.split(',').indexOf(pair) + 1} is not key=tenant`); // never print a key
    const tenant = pair.slice(eq + 1);
    if (!TENANT_ID_RE.test(tenant)) throw new Error(`invalid environment:\n  AGENTLOOP_API_KEYS: tenant '${tenant.slice(0, 40)}' does not match [A-Za-z0-9_.@-]{1,128}`);
    apiKeys.set(pair.slice(0, eq), tenant);
  }
  for (const name of list(e.AGENTLOOP_MODEL_KEY_ENVS))
    if (!/^[A-Z_][A-Z0-9_]*$/.test(name)) throw new Error(`invalid environment:\n  AGENTLOOP_MODEL_KEY_ENVS: '${name}' is not an environment variable name`);
  for (const origin of list(e.AGENTLOOP_CORS_ORIGINS))
    if (!corsOrigin(origin)) throw new Error(`invalid environment:\n  AGENTLOOP_CORS_ORIGINS: '${origin.slice(0, 200)}' is not an origin (http(s)://host[:port], without a path, not even /)`);
  const redis = redisTargetFromEnv(cleaned, e.REDIS_URL);
  const badPrefix = prefixProblem(e.AGENTLOOP_PREFIX, redis);
  if (badPrefix) throw new Error(`invalid environment:\n  ${badPrefix}`);
  return {
    redisUrl: e.REDIS_URL,
    redis,
    prefix: keyPrefix(e.AGENTLOOP_PREFIX, redis),
    port: e.AGENTLOOP_PORT,
    metricsPort: e.AGENTLOOP_METRICS_PORT,
    host: e.AGENTLOOP_HOST,
    apiKeys,
    authRequired: e.AGENTLOOP_AUTH === 'required',
    toolModules: e.AGENTLOOP_TOOL_MODULES.split(',').map((s) => s.trim()).filter(Boolean),
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
      : { '*': 300_000, ...parseJsonEnv('AGENTLOOP_POOL_PICKUP_MS', e.AGENTLOOP_POOL_PICKUP_MS, PoolPickupSchema, '{"*":300000,"gpu":900000}') },
    llmAttempts: e.AGENTLOOP_LLM_ATTEMPTS,
    llmRetryBaseMs: e.AGENTLOOP_LLM_RETRY_BASE_MS,
    llmMaxWaitMs: e.AGENTLOOP_LLM_MAX_WAIT_MS,
    providerLimits: parseJsonEnv('AGENTLOOP_PROVIDER_LIMITS', e.AGENTLOOP_PROVIDER_LIMITS, ProviderLimitsSchema, '{"openai":{"concurrency":50,"rpm":3000}}') as ProviderLimits,
    modelBaseUrls: urlPrefixes('AGENTLOOP_MODEL_BASE_URLS', e.AGENTLOOP_MODEL_BASE_URLS),
    modelKeyEnvs: list(e.AGENTLOOP_MODEL_KEY_ENVS),
    modelPrices: parseJsonEnv('AGENTLOOP_MODEL_PRICES', e.AGENTLOOP_MODEL_PRICES, ModelPricesSchema, '{"openai/gpt-x":{"input":1,"output":4}}'),
    tenantLimits: parseJsonEnv('AGENTLOOP_TENANT_LIMITS', e.AGENTLOOP_TENANT_LIMITS, TenantLimitsSchema, '{"*":{"requestsPerSecond":50,"burst":100,"activeRuns":1000,"streams":200}}'),
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
      modelKeys: new Map(list(e.AGENTLOOP_MODEL_KEY_ENVS).flatMap((name) => (cleaned[name] ? [[name, cleaned[name]] as const] : []))),
      httpClient: e.AGENTLOOP_HTTP_CLIENT,
      proxy: ['HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy'].some((k) => cleaned[k]),
      openaiCustomHeaders: e.OPENAI_CUSTOM_HEADERS,
    },
    warnings: [],
  };
}
