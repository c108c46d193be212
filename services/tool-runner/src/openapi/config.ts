import { z } from 'zod';
import { substituteEnvRefs } from '../env-refs.js';
import { parseJsonSetting } from '../json-setting.js';

const SIDE_EFFECTS = ['read', 'reversible', 'external', 'critical'] as const;

export const OpenApiToolsConfigSchema = z
  .object({
    name: z
      .string()
      .regex(/^[a-zA-Z0-9_-]{1,32}$/, "a name is 1 to 32 of [a-zA-Z0-9_-] (it prefixes its tools' names)"),
    spec: z.string().min(1, 'spec is the path or http(s) URL of an OpenAPI 3.x document'),
    baseUrl: z
      .url({ protocol: /^https?$/ })
      .refine(
        (u) => !URL.parse(u)?.username && !URL.parse(u)?.password && !URL.parse(u)?.search,
        'baseUrl is an http(s) URL without credentials or query (credentials go in headers)',
      ),
    headers: z
      .record(z.string(), z.string())
      .refine((h) => Object.keys(h).every((k) => /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(k)), 'a key is not a header name')
      .default({}),
    operations: z
      .array(z.string().min(1).max(200))
      .min(1, 'list the operationIds to expose as tools')
      .max(500, 'at most 500 operations an entry (each is a tool in every model request that offers it)'),
    sideEffects: z.record(z.string(), z.enum(SIDE_EFFECTS)).default({}),
    pool: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,40}$/, 'pool names are lowercase letters, digits and -')
      .default('default'),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(24 * 3_600_000)
      .default(30_000),
    allowPrivate: z.boolean().default(false),
  })
  .strict()
  .refine((e) => e.pool !== 'local', {
    path: ['pool'],
    message: 'OpenAPI tools are served by tool-runners: pool "local" (the orchestrator itself) cannot hold them',
  })
  .refine((e) => Object.keys(e.sideEffects).every((op) => e.operations.includes(op)), {
    path: ['sideEffects'],
    message: 'names an operation that is not in operations',
  })
  .refine((e) => new Set(e.operations).size === e.operations.length, {
    path: ['operations'],
    message: 'lists an operation twice',
  });

export type OpenApiToolsConfig = z.infer<typeof OpenApiToolsConfigSchema>;

/** AGENTLOOP_OPENAPI_TOOLS (SPEC §6): a JSON array, or the path of a file holding one; a mistake stops the process. */
export function parseOpenApiTools(value: string | undefined): OpenApiToolsConfig[] {
  return parseJsonSetting('AGENTLOOP_OPENAPI_TOOLS', value, z.array(OpenApiToolsConfigSchema), 'OpenAPI tool entries');
}

/**
 * The entry's headers with `${env:NAME}` replaced from `environment`. `missing`: names of unset variables (the entry
 * is not started); `secrets`: the values substituted, kept out of results and error messages.
 */
export function resolveHeaders(
  e: OpenApiToolsConfig,
  environment: Record<string, string | undefined>,
): { headers: Record<string, string>; missing: string[]; secrets: string[] } {
  const missing = new Set<string>();
  const secrets = new Set<string>();
  const headers = Object.fromEntries(
    Object.entries(e.headers).map(([k, v]) => [k, substituteEnvRefs(v, environment, missing, secrets)]),
  );
  return { headers, missing: [...missing], secrets: [...secrets].filter((s) => s.length >= 4) };
}
