import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  Metrics,
  Partitions,
  QueueSet,
  RunStore,
  ToolCatalog,
  partitionOf,
  type CatalogEntry,
} from '@agentloop/runtime';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { RunIntake } from './intake.js';

describe('RunIntake (real Redis)', () => {
  let redis: Redis;
  let queues: QueueSet;
  const prefix = testPrefix('intake');
  beforeAll(() => {
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    queues = new QueueSet(redis, prefix);
  });
  afterAll(async () => {
    await queues.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const entry = (name: string): CatalogEntry => ({
    name,
    description: name,
    parameters: { type: 'object' },
    sideEffect: 'read',
    pool: 'default',
    timeoutMs: 1000,
    retry: 'safe',
  });
  const body = (tools: string[]) => ({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools });

  it("checks a request's tools against the catalog as Redis holds it: a tool published after the cache was read is accepted", async () => {
    const catalog = new ToolCatalog(redis, prefix);
    await catalog.publish([entry('calculator')]);
    expect((await catalog.all()).size).toBe(1); // cached (2 s) without the tool published next
    await new ToolCatalog(redis, prefix).publish([entry('side_effect')]); // another process's tool-runner
    const intake = new RunIntake(
      new Partitions([partitionOf(new RunStore(redis, prefix), queues)]),
      catalog,
      new Metrics(),
    );
    expect(await intake.create('T', body(['side_effect']))).toMatchObject({ kind: 'created' });
    expect(await intake.create('T', body(['ghost']))).toMatchObject({
      kind: 'invalid',
      message: 'unknown tool(s): ghost',
    });
  });
});
