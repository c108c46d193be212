import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { clusterKeysOf, testClusterNodes, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const script = byScenario(
  {
    calc: (req: MockRequest): ReplySpec =>
      req.messages.some((m) => m.role === 'tool')
        ? { text: 'done' }
        : { toolCalls: [{ name: 'calculator', args: { expression: '2*3' } }] },
  },
  'calc',
);

/**
 * The cluster pass (AGENTLOOP_TEST_CLUSTER=1, vitest.cluster.config.ts) checks its own means: each stack starts the
 * product on the run's Redis Cluster, which writes every key of a run under the hash tag of the stack's prefix (one
 * slot), and the stack's cleanup leaves none of them. Skipped in the normal pass.
 */
describe.skipIf(!testClusterNodes())('the e2e stacks in cluster mode', () => {
  it.each([
    { layout: 'InProcessStack', start: () => InProcessStack.start({ script }) },
    {
      layout: 'ProcessStack (orchestrator, tool-runner, api)',
      start: () => ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script }),
    },
  ])(
    '$layout: a run on the cluster, its keys in the prefix slot, none left after stop',
    async ({ start }) => {
      const s = await start();
      const conn = s.redis as unknown as Cluster;
      const prefix = s.prefix;
      try {
        expect(conn).toBeInstanceOf(Cluster);
        const id = await s.a.startRun({
          input: '[calc] go',
          model: { provider: 'openai', name: 'gpt-4o-mini' },
          tools: ['calculator'],
        });
        expect((await finishedRun(s.a, id)).snap.status).toBe('completed');
        const keys = await clusterKeysOf(conn, prefix);
        const names = [...keys.keys()];
        expect(names.filter((k) => k.startsWith(`{${prefix}}:run:`)).length).toBeGreaterThan(0);
        expect(names.filter((k) => !k.startsWith(`{${prefix}}:`))).toEqual([]);
        expect(new Set(keys.values())).toEqual(new Set([Number(await conn.call('CLUSTER', 'KEYSLOT', `{${prefix}}`))]));
      } finally {
        await s.stop();
      }
      const after = new Cluster(
        testClusterNodes()!
          .split(',')
          .map((hp) => ({ host: '127.0.0.1', port: Number(hp.split(':')[1]) })),
      );
      try {
        expect([...(await clusterKeysOf(after, prefix)).keys()]).toEqual([]);
      } finally {
        after.disconnect();
      }
    },
    60_000,
  );
});
