import { z } from 'zod';

export interface HostPort {
  host: string;
  port: number;
}

/** Where the deployment's Redis is (SPEC §1): REDIS_CLUSTER_NODES, else REDIS_SENTINELS, else REDIS_URL. */
export type RedisTarget =
  | { kind: 'url'; url: string }
  /** Through Sentinel: the master named `name`; credentials and database from `url` (REDIS_URL), when it has them. */
  | { kind: 'sentinel'; sentinels: HostPort[]; name: string; url: string }
  /** A Redis Cluster through its seed nodes; credentials from `url`. */
  | { kind: 'cluster'; nodes: HostPort[]; url: string };

const HostPortSchema = z
  .string()
  .trim()
  .regex(/^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/, 'not host:port');

/** `host:port,host:port`, or the process stops naming the variable and the entry. */
function hostPorts(variable: string, raw: string): HostPort[] {
  const entries = raw
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (!entries.length) throw new Error(`invalid environment:\n  ${variable}: empty (expected host:port,host:port)`);
  return entries.map((entry) => {
    const parsed = HostPortSchema.safeParse(entry);
    const port = parsed.success ? Number(entry.slice(entry.lastIndexOf(':') + 1)) : 0;
    if (!parsed.success || port < 1 || port > 65_535)
      throw new Error(`invalid environment:\n  ${variable}: '${entry.slice(0, 100)}' is not host:port`);
    return { host: entry.slice(0, entry.lastIndexOf(':')).replace(/^\[(.*)\]$/, '$1'), port };
  });
}

/** The Redis target of the environment (REDIS_URL already defaulted); a malformed setting stops the process. */
export function redisTargetFromEnv(env: Record<string, string | undefined>, url: string): RedisTarget {
  const set = (name: string) => (env[name]?.trim() ? env[name].trim() : undefined);
  const clusterNodes = set('REDIS_CLUSTER_NODES');
  const sentinels = set('REDIS_SENTINELS');
  if (clusterNodes && sentinels)
    throw new Error(
      'invalid environment:\n  REDIS_CLUSTER_NODES and REDIS_SENTINELS are both set: a deployment uses a Redis Cluster or Sentinel, not both',
    );
  if (clusterNodes) return { kind: 'cluster', nodes: hostPorts('REDIS_CLUSTER_NODES', clusterNodes), url };
  if (sentinels) {
    const name = set('REDIS_SENTINEL_NAME');
    if (!name)
      throw new Error(
        'invalid environment:\n  REDIS_SENTINELS is set without REDIS_SENTINEL_NAME (the name of the master the sentinels monitor)',
      );
    return { kind: 'sentinel', sentinels: hostPorts('REDIS_SENTINELS', sentinels), name, url };
  }
  if (set('REDIS_SENTINEL_NAME'))
    throw new Error(
      'invalid environment:\n  REDIS_SENTINEL_NAME is set without REDIS_SENTINELS (the sentinels to ask for the master)',
    );
  return { kind: 'url', url };
}

/**
 * The prefix every key and queue of the deployment lives under. A Redis Cluster runs a script or a multi-key command
 * only when all its keys share one slot; with one partition the product puts the whole deployment under one hash
 * tag it derives from the plain AGENTLOOP_PREFIX (`{agentloop}`), BullMQ's queues included. Run keys keep their own
 * `{runId}`, but Redis hashes only the first `{…}` of a key, so they too land in the prefix's slot. Elsewhere the
 * prefix is used as it is.
 */
export function keyPrefix(prefix: string, target: RedisTarget): string {
  return target.kind === 'cluster' ? `{${prefix}}` : prefix;
}

/** SPEC §1: in cluster mode the product makes the hash tags itself, so a prefix with braces stops the process. */
export function prefixProblem(prefix: string, target: RedisTarget): string | null {
  if (target.kind !== 'cluster' || !/[{}]/.test(prefix)) return null;
  return `AGENTLOOP_PREFIX '${prefix.slice(0, 100)}' contains '{' or '}': with REDIS_CLUSTER_NODES the prefix is a plain name and agentloop derives the hash tags from it itself (set AGENTLOOP_PREFIX=${prefix.replace(/[{}]/g, '') || 'agentloop'})`;
}

/** Where a target points, without credentials (safe to log). */
export function targetEndpoint(target: RedisTarget): string {
  const list = (hs: HostPort[]) => hs.map((h) => `${h.host}:${h.port}`).join(',');
  if (target.kind === 'cluster') return `cluster ${list(target.nodes)}`;
  if (target.kind === 'sentinel') return `sentinel ${target.name}@${list(target.sentinels)}`;
  const u = URL.parse(target.url);
  return u
    ? `${u.hostname}:${u.port || '6379'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}`
    : 'an unparsable REDIS_URL';
}

/** The credentials, database and TLS of a redis:// or rediss:// URL, for connections that find their hosts elsewhere. */
export function urlAuth(url: string): { username?: string; password?: string; db?: number; tls?: object } {
  const u = URL.parse(url);
  if (!u) return {};
  const db = Number(u.pathname.slice(1));
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    ...(u.pathname.length > 1 && Number.isInteger(db) ? { db } : {}),
    ...(u.protocol === 'rediss:' ? { tls: {} } : {}),
  };
}
