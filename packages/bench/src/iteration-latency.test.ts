import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { cleanupPrefix, startMockLlm, stepOf, testPrefix, testRedisUrl, type MockLlmServer } from '@agentloop/testing';
import { latencyFigures, likeForLikeLines, outsideModel } from './iteration-latency.js';

// Issue 12's latency target compares one iteration's wall time outside the model call, the product's against the raw
// loop's (issue 21): both loops must report every iteration that has a next one, each a time that holds the hops.
describe('the latency target: an iteration outside its model call, both loops', () => {
  it('is the start-to-next-start time minus the model call, per run, whatever order the iterations are reported in', () => {
    const t = (runId: string, iteration: number, startedAt: number, modelSeconds: number) => ({
      runId,
      iteration,
      startedAt,
      modelSeconds,
    });
    const out = outsideModel([
      t('b', 2, 1010, 0.001),
      t('a', 2, 105, 0.002),
      t('a', 1, 100, 0.003),
      t('b', 1, 1000, 0.004),
      t('a', 3, 112, 0.5),
    ]);
    expect(out.map((s) => Math.round(s * 1e6)).sort((x, y) => x - y)).toEqual([2000, 5000, 6000]); // a: 5-3, 7-2 ms; b: 10-4 ms
  });

  const prefix = testPrefix('latency');
  const tools = path.join(os.tmpdir(), `agentloop-latency-test-tools-${process.pid}.mjs`);
  let redis: Redis;
  let mock: MockLlmServer;

  beforeAll(async () => {
    redis = new Redis(testRedisUrl());
    fs.writeFileSync(
      tools,
      `export default [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' }, sideEffect: 'read', async execute() { return { ok: true }; } }];\n`,
    );
    mock = await startMockLlm({
      script: (req) =>
        stepOf(req) < 2 ? { toolCalls: [{ name: 'noop', args: { i: stepOf(req) } }] } : { text: 'done' },
    });
  });

  afterAll(async () => {
    await mock.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
    fs.rmSync(tools, { force: true });
  });

  it('measures both loops on the same mock and tool: two timed iterations a run, each positive and below a second', async () => {
    const env = {
      redisUrl: testRedisUrl(),
      mockUrl: mock.url,
      toolsModule: tools,
      localToolsModule: tools,
      iterations: 3,
      concurrency: { orchestrator: 4, tools: 4 },
      prior: [{ role: 'user', content: 'go' }],
    };
    const before = mock.journal.length;
    const figures = await latencyFigures(env, 'openai', prefix, { runs: 3, warmup: 2, parallel: 2 });
    expect(mock.journal.length - before).toBe(2 * (2 + 3) * 3); // both loops: 5 runs × 3 model calls each
    for (const loop of [figures.raw, figures.product]) {
      expect(loop).toHaveLength(3 * 2); // the measured runs only, the last iteration of each not counted
      for (const s of loop) {
        expect(s).toBeGreaterThan(0);
        expect(s).toBeLessThan(1);
      }
    }
    expect(likeForLikeLines(figures).target).toMatch(/vs raw loop +\d+\.\d\d×/);
  }, 60_000);
});
