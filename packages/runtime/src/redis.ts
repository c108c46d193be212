import { Redis } from 'ioredis';

/** A connection for commands and BullMQ (maxRetriesPerRequest null, as BullMQ workers require). */
export function createRedis(url: string, name = 'agentloop'): Redis {
  const r = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: name });
  r.on('error', () => {}); // reconnects on its own; failures surface on the commands that need it
  return r;
}
