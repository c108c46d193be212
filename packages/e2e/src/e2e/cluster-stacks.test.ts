import { describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { testClusterNodes, type MockRequest, type ReplySpec } from '@agentloop/testing';
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

/** Every key of the cluster with the prefix in its name, plain or hash-tagged, with its slot (from each primary). */
async function keysOf(conn: Cluster, prefix: string): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  await conn.ping(); // connected, so it knows the primaries
  for (const node of conn.nodes('master')) {
    let cursor = '0';
    do {
      const [next, keys] = await node.scan(cursor, 'MATCH', `*${prefix}*`, 'COUNT', 1000);
      for (const k of keys) found.set(k, Number(await node.call('CLUSTER', 'KEYSLOT', k)));
      cursor = next;
    } while (cursor !== '0');
  }
  return found;
}

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
        const keys = await keysOf(conn, prefix);
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
        expect([...(await keysOf(after, prefix)).keys()]).toEqual([]);
      } finally {
        after.disconnect();
      }
    },
    60_000,
  );
});
