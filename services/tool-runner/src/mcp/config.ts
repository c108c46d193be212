import { z } from 'zod';
import { substituteEnvRefs } from '../env-refs.js';
import { parseJsonSetting } from '../json-setting.js';

const NAME_RE = /^[a-zA-Z0-9_-]{1,32}$/;
const stringMap = z.record(z.string(), z.string());

export const McpServerConfigSchema = z
  .object({
    name: z.string().regex(NAME_RE, "a server name is 1 to 32 of [a-zA-Z0-9_-] (it prefixes its tools' names)"),
    command: z.string().min(1).optional(),
    url: z.url({ protocol: /^https?$/ }).optional(),
    args: z.array(z.string()).default([]),
    env: stringMap.default({}),
    headers: stringMap.default({}),
    pool: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]{0,40}$/, 'pool names are lowercase letters, digits and -')
      .default('default'),
    trust: z.enum(['untrusted', 'trusted']).default('untrusted'),
    allowTools: z.array(z.string()).optional(),
    denyTools: z.array(z.string()).default([]),
    timeoutMs: z
      .number()
      .int()
      .positive()
      .max(24 * 3_600_000)
      .default(30_000),
  })
  .strict()
  .refine((s) => (s.command === undefined) !== (s.url === undefined), {
    message: 'give exactly one of command (stdio) and url (Streamable HTTP)',
  })
  .refine((s) => s.pool !== 'local', {
    path: ['pool'],
    message: 'an MCP server is served by tool-runners: pool "local" (the orchestrator itself) cannot hold it',
  });

export type McpServerConfig = z.infer<typeof McpServerConfigSchema>;

/**
 * AGENTLOOP_MCP_SERVERS (SPEC §6): a JSON array, or the path of a file holding one. Throws one message naming every
 * problem (and the entry it is in), so the process stops at start instead of serving a catalog short of tools.
 */
export function parseMcpServers(value: string | undefined): McpServerConfig[] {
  return parseJsonSetting('AGENTLOOP_MCP_SERVERS', value, z.array(McpServerConfigSchema), 'servers');
}

/**
 * `${env:NAME}` in a server's args, env and headers, replaced from `environment`. A server naming an unset variable
 * gets `missing` (the names, never values) and is not started.
 */
export function resolveEnvRefs(
  s: McpServerConfig,
  environment: Record<string, string | undefined>,
): { server: McpServerConfig; missing: string[] } {
  const missing = new Set<string>();
  const sub = (v: string) => substituteEnvRefs(v, environment, missing);
  const subMap = (m: Record<string, string>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, sub(v)]));
  return {
    server: { ...s, args: s.args.map(sub), env: subMap(s.env), headers: subMap(s.headers) },
    missing: [...missing],
  };
}
