import { z } from 'zod';
import { MAX_PARTITIONS } from './partition-names.js';

const intFrom = (dflt: number, min = 0) => z.coerce.number().int().min(min).default(dflt);
const httpUrl = z.string().refine((v) => /^https?:$/.test(URL.parse(v)?.protocol ?? ''), 'an http(s) URL');

/** The environment variables a process reads: each one's default, bounds and format (loadConfig turns them into a Config). */
export const EnvSchema = z.object({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  AGENTLOOP_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_{}.-]{1,64}$/, 'letters, digits, _ . - and {} only')
    .default('agentloop'),
  /** How many partitions runs are spread over (SPEC §1): each its own keys and queues, in cluster mode its own slot. */
  AGENTLOOP_PARTITIONS: intFrom(1, 1).refine((n) => n <= MAX_PARTITIONS, `at most ${MAX_PARTITIONS}`),
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
  AGENTLOOP_CONSOLE_TRACE_URL: z
    .string()
    .regex(/^https?:\/\/[^\s]*\{traceId\}[^\s]*$/, 'must be an http(s) URL with {traceId} in it')
    .optional(),
  /** JSON {"*":{"requestsPerSecond":50,"burst":100,"activeRuns":1000,"streams":200},"tenantA":{...}}. */
  AGENTLOOP_TENANT_LIMITS: z.string().default('{}'),
  /** The model the compressor summarizes with ("provider/name"; default: the run's own). */
  AGENTLOOP_COMPRESSION_MODEL: z
    .string()
    .regex(
      /^(openai|google|deepseek|openai-compatible)\/[A-Za-z0-9][A-Za-z0-9._:@/+-]{0,199}$/,
      'provider/name, e.g. openai/gpt-4o-mini',
    )
    .optional(),
  /** The OpenAI SDK's transport: node (node:http) or fetch. */
  AGENTLOOP_HTTP_CLIENT: z.enum(['node', 'fetch']).default('node'),
  /** How long a finished run stays readable (seconds). */
  AGENTLOOP_RUN_RETENTION_S: intFrom(604_800, 1),
  /** Gone: runs have one layout. Accepted as 3 only, so a deployment still set to 1 or 2 stops with a reason. */
  AGENTLOOP_RUN_LAYOUT: z
    .string()
    .refine(
      (v) => v.trim() === '3',
      'layouts 1 and 2 were removed: unset it, and drain runs of a build before 2026-12-03 first (docs/OPERATIONS.md)',
    )
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
