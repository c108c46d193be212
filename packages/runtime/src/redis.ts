import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { Logger } from './logger.js';
import { targetEndpoint, urlAuth, type RedisTarget } from './redis-target.js';

/** A connection of the deployment: one Redis (through REDIS_URL or Sentinel) or a Redis Cluster. */
export type RedisConnection = Redis | Cluster;

/** Where a Redis URL points, without credentials (safe to log). */
export function redisEndpoint(url: string): string {
  return targetEndpoint({ kind: 'url', url });
}

const lastErrors = new WeakMap<RedisConnection, string>();

/** After a failover the old primary, now a replica, answers writes READONLY: reconnect (to the new one) and resend. */
const reconnectOnReadonly = (err: Error) => (err.message.startsWith('READONLY') ? 2 : false);

/**
 * A Sentinel connection that ioredis ended on its own connects again; only a close the process asked for (`quit`,
 * `disconnect`) ends it. ioredis ends a connection for good when a reconnect is cut short while it asks the sentinels
 * for the primary — the failover detector of the connection before disconnecting it — and from then on every command
 * fails at once with `Connection is closed.` (seen after a failover: an api answering 500 for minutes while the runs
 * went on). Its duplicates (BullMQ's connections) are kept the same way.
 */
export function reconnectUnlessClosed(r: Redis): Redis {
  let closing = false;
  const { quit, disconnect, duplicate } = r;
  r.quit = ((...args: unknown[]) => {
    closing = true;
    return (quit as (...a: unknown[]) => unknown).apply(r, args);
  }) as typeof r.quit;
  r.disconnect = (reconnect = false) => {
    if (!reconnect) closing = true;
    disconnect.call(r, reconnect);
  };
  r.duplicate = ((...args: Parameters<typeof duplicate>) =>
    reconnectUnlessClosed(duplicate.apply(r, args))) as typeof r.duplicate;
  let attempts = 0;
  r.on('ready', () => {
    attempts = 0;
    closing = false; // connected again by its owner after a close (BullMQ does so with its blocking connection)
  });
  r.on('end', () => {
    if (closing) return;
    const again = () => {
      if (!closing && r.status === 'end') r.connect().catch(() => undefined); // a failed attempt ends it again: 'end' once more
    };
    setTimeout(again, Math.min(1000, 50 * 2 ** attempts++)).unref();
  });
  return r;
}

/**
 * The one factory of the deployment's Redis connections, for commands and for BullMQ (maxRetriesPerRequest null, as
 * BullMQ workers require; `duplicate()` of one keeps its target): an ioredis `Cluster` for REDIS_CLUSTER_NODES, a
 * connection through Sentinel for REDIS_SENTINELS (it follows the master across failovers), else REDIS_URL. It
 * reconnects on its own; with a logger, losing or not reaching Redis is said at once — where, which error, that it
 * keeps retrying — then at most every `repeatMs` while it lasts, and its return once.
 */
export function createRedis(
  target: string | Exclude<RedisTarget, { kind: 'cluster' }>,
  name?: string,
  logger?: Logger,
  repeatMs?: number,
): Redis;
export function createRedis(
  target: Extract<RedisTarget, { kind: 'cluster' }>,
  name?: string,
  logger?: Logger,
  repeatMs?: number,
): Cluster;
export function createRedis(
  target: string | RedisTarget,
  name?: string,
  logger?: Logger,
  repeatMs?: number,
): RedisConnection;
export function createRedis(
  target: string | RedisTarget,
  name = 'agentloop',
  logger?: Logger,
  repeatMs = 10_000,
): RedisConnection {
  const t: RedisTarget = typeof target === 'string' ? { kind: 'url', url: target } : target;
  const common: RedisOptions = { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name };
  const { db, ...auth } = urlAuth(t.url);
  const r: RedisConnection =
    t.kind === 'cluster'
      ? new Cluster(t.nodes, { enableReadyCheck: true, redisOptions: { ...common, ...auth } })
      : t.kind === 'sentinel'
        ? reconnectUnlessClosed(
            new Redis({
              ...common,
              ...auth,
              ...(db !== undefined ? { db } : {}),
              sentinels: t.sentinels,
              name: t.name,
              failoverDetector: true,
              reconnectOnError: reconnectOnReadonly,
            }),
          )
        : new Redis(t.url, common);
  const where = targetEndpoint(t);
  let down = false;
  let lastSaid = 0;
  r.on('error', (err: Error & { code?: string }) => {
    lastErrors.set(r, err.code ?? err.name); // the code only: /readyz is unauthenticated, the message names addresses
    const now = Date.now();
    if (!down || now - lastSaid >= repeatMs) {
      logger?.error(
        { redis: where, connection: name, err: { code: err.code, message: err.message } },
        `cannot reach Redis at ${where} (${err.code ?? err.message}); retrying`,
      );
      lastSaid = now;
    }
    down = true;
  });
  r.on('ready', () => {
    lastErrors.delete(r);
    if (down) logger?.warn({ redis: where, connection: name }, `Redis at ${where} is reachable again`);
    down = false;
  });
  return r;
}

/**
 * The connection as the product's classes take it. They are typed against `Redis` and use only what a `Cluster` has
 * too — commands, pipelines and scripts (defineCommand, EVALSHA), `duplicate()` for blocking commands and BullMQ,
 * pub/sub — and in cluster mode every key they touch is in the one slot of the deployment's prefix (keyPrefix), so
 * each script, pipeline and multi-key command goes to one node.
 */
export function commandConnection(c: RedisConnection): Redis {
  return c as Redis;
}

/** Why a connection cannot serve commands now, or null when it can (readiness checks must not wait for Redis). */
export function redisProblem(r: RedisConnection): string | null {
  if (r.status === 'ready') return null;
  return `redis ${r.status}${lastErrors.has(r) ? ` (${lastErrors.get(r)})` : ''}`;
}
