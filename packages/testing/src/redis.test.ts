import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { chooseTestRedis, machineProbes, resolveTestRedis } from './redis.js';

const probes = (redisServer: boolean, docker: boolean) => ({
  redisServerInstalled: () => redisServer,
  dockerEngineAnswers: () => docker,
});

describe('the test Redis', () => {
  it.each([
    [{ REDIS_URL: 'redis://x:1' }, probes(true, true), 'env'],
    [{}, probes(true, true), 'redis-server'],
    [{}, probes(true, false), 'redis-server'],
    [{}, probes(false, true), 'container'],
    [{}, probes(false, false), 'none'],
    [{ REDIS_URL: '' }, probes(false, true), 'container'],
  ] as const)('with %j and probes → %s', (env, p, expected) => {
    expect(chooseTestRedis(env, p)).toBe(expected);
  });

  it('says how to get one when there is none', async () => {
    const saved = process.env.REDIS_URL;
    delete process.env.REDIS_URL;
    try {
      await expect(resolveTestRedis(probes(false, false))).rejects.toThrow(/install redis-server .* or start Docker/i);
    } finally {
      if (saved !== undefined) process.env.REDIS_URL = saved;
    }
  });

  const engine = machineProbes.dockerEngineAnswers();
  // skipped where no Docker engine answers `docker info` (as on the development machine)
  it.skipIf(!engine)(
    'starts a Redis container where a Docker engine answers (testcontainers)',
    async () => {
      const saved = process.env.REDIS_URL;
      delete process.env.REDIS_URL;
      const r = await resolveTestRedis(probes(false, true)).finally(
        () => saved !== undefined && (process.env.REDIS_URL = saved),
      );
      try {
        const client = new Redis(r.url);
        expect(await client.ping()).toBe('PONG');
        client.disconnect();
      } finally {
        await r.server?.stop();
      }
    },
    120_000,
  );
});
