import { afterAll, describe, expect, it } from 'vitest';
import { Worker } from 'bullmq';
import { RedisServer, testPrefix } from '@agentloop/testing';
import { createRedis } from './redis.js';
import { notReadyReason, readyzAnswer, workerTakingJobs } from './readiness.js';

describe('readiness (real Redis, real BullMQ workers)', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    for (const s of servers) await s.stop();
  });

  it('is ready while every connection serves commands and every role’s worker takes jobs; else says why', async () => {
    const server = await RedisServer.start();
    servers.push(server);
    const redis = createRedis(server.url, 'agentloop-cmd');
    const worker = new Worker('readiness', async () => undefined, {
      connection: redis.duplicate(),
      prefix: testPrefix('ready'),
    });
    worker.on('error', () => {}); // its connection's complaints while Redis is stopped (createRedis logs ours)
    await worker.waitUntilReady();
    const roles = [{ role: 'orchestrator', isRunning: () => workerTakingJobs(worker) }];
    await new Promise((r) => setTimeout(r, 100));
    expect(notReadyReason([redis], roles)).toBeNull();
    expect(readyzAnswer(null)).toEqual({ status: 200, body: { status: 'ready' } });

    await server.stop('SIGKILL');
    await new Promise((r) => setTimeout(r, 500));
    expect(notReadyReason([redis], roles)).toMatch(/^redis (connecting|reconnecting|close|end)/);
    expect(readyzAnswer('redis reconnecting (ECONNREFUSED)')).toEqual({
      status: 503,
      body: { status: 'not_ready', reason: 'redis reconnecting (ECONNREFUSED)' },
    });

    await server.start();
    for (let t0 = Date.now(); notReadyReason([redis], roles) !== null && Date.now() - t0 < 10_000;)
      await new Promise((r) => setTimeout(r, 100));
    expect(notReadyReason([redis], roles)).toBeNull();
    await worker.close(true); // a worker that stopped (or never started) takes no job: not ready (forced: its blocking
    // connection may still be reconnecting after the restart, and a graceful close would wait it out)
    expect(workerTakingJobs(worker)).toBe(false);
    expect(notReadyReason([redis], roles)).toBe('orchestrator worker not running');
    expect(workerTakingJobs(null)).toBe(false);
    redis.disconnect();
  });
});
