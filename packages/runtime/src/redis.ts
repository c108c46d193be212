import { Redis } from 'ioredis';
import type { Logger } from './logger.js';

/** Where a Redis URL points, without credentials (safe to log). */
export function redisEndpoint(url: string): string {
  const u = URL.parse(url);
  return u ? `${u.hostname}:${u.port || '6379'}${u.pathname && u.pathname !== '/' ? u.pathname : ''}` : 'an unparsable REDIS_URL';
}

const lastErrors = new WeakMap<Redis, string>();

/**
 * A connection for commands and BullMQ (maxRetriesPerRequest null, as BullMQ workers require). It reconnects on
 * its own; with a logger, losing or not reaching Redis is said at once — where, which error, that it keeps
 * retrying — then at most every `repeatMs` while it lasts, and its return once.
 */
export function createRedis(url: string, name = 'agentloop', logger?: Logger, repeatMs = 10_000): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name });
  const where = redisEndpoint(url);
  let down = false;
  let lastSaid = 0;
  r.on('error', (err: Error & { code?: string }) => {
    lastErrors.set(r, err.code ?? err.name); // the code only: /readyz is unauthenticated, the message names addresses
    const now = Date.now();
    if (!down || now - lastSaid >= repeatMs) {
      logger?.error({ redis: where, connection: name, err: { code: err.code, message: err.message } }, `cannot reach Redis at ${where} (${err.code ?? err.message}); retrying`);
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

/** Why a connection cannot serve commands now, or null when it can (readiness checks must not wait for Redis). */
export function redisProblem(r: Redis): string | null {
  if (r.status === 'ready') return null;
  return `redis ${r.status}${lastErrors.has(r) ? ` (${lastErrors.get(r)})` : ''}`;
}
