import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisSentinelFixture, checkEvents, checkTranscript, stepOf, type Script } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { describeRun, until } from '../test-support/helpers.js';

/** AGENTLOOP_FAILOVER_RUNS: runs in flight when the primary is killed (issue 25's figure: 200) [20]. */
const RUNS = Number(process.env.AGENTLOOP_FAILOVER_RUNS ?? 20);
const model = { provider: 'openai', name: 'gpt-4o-mini' };

/**
 * SPEC §1 REDIS_SENTINELS: every process connects through a Sentinel group (one primary, one replica, three sentinels
 * of this machine's redis-server) and follows the primary across a failover.
 */
describe('Redis Sentinel (api, orchestrator and tool-runner processes; a real Sentinel group)', () => {
  let group: RedisSentinelFixture;
  let s: ProcessStack;
  beforeAll(async () => {
    group = await RedisSentinelFixture.start();
    // the first iteration calls effect_once (retry: never: a second execution would show in the effect log), the second answers
    const script: Script = (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'effect_once', args: { ms: 200 } }] } : { text: 'done', delayMs: 50 };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      redisUrl: `redis://127.0.0.1:${await group.primaryPort()}`, // the product asks the sentinels (REDIS_SENTINELS)
      testRedis: {
        sentinels: group.seeds.split(',').map((a) => ({ host: a.split(':')[0]!, port: Number(a.split(':')[1]) })),
        name: group.name,
      },
      env: { REDIS_SENTINELS: group.seeds, REDIS_SENTINEL_NAME: group.name },
    });
    s.redis.on('error', () => undefined); // the test's own connection follows the failover too (its cleanup needs it)
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await group?.stop();
  });

  it('a run completes end to end through Sentinel, its events and transcript whole', async () => {
    const id = await s.a.startRun({ input: 'once', model, tools: ['effect_once'] });
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap.status).toBe('completed');
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
  }, 60_000);

  it(`the primary killed mid-run (the sentinels promote the replica): none of ${RUNS} runs lost, no call applied twice`, async () => {
    const ids = await Promise.all(
      Array.from({ length: RUNS }, (_, i) => s.a.startRun({ input: `run ${i}`, model, tools: ['effect_once'] })),
    );
    await until('calls under way', () => s.effects().filter((e) => e.phase === 'start').length >= 3);
    const settled = s.effects().filter((e) => e.phase === 'end').length;
    expect(settled).toBeLessThan(RUNS); // the failover starts while calls are still to run or running
    const before = await group.primaryPort();
    const after = await group.killPrimary();
    expect(after).not.toBe(before);
    const snaps = await Promise.all(
      ids.map((id) =>
        s.a.waitTerminal(id, 90_000).catch(async (err: Error) => {
          const state = await describeRun(s.redis, s.prefix, id);
          const logs = [...s.procs.values()].map((p) => `--- ${p.name}\n${p.output.slice(-40).join('\n')}`).join('\n');
          throw new Error(`${err.message}\n${state}\n${logs}`);
        }),
      ),
    );
    expect(
      snaps.map((x) =>
        x.status === 'completed'
          ? x.status
          : JSON.stringify({ id: x.id, status: x.status, error: x.error, stopReason: x.stopReason }),
      ),
    ).toEqual(ids.map(() => 'completed'));
    // nothing applied twice: each call's effect started at most once (a repeated delivery answers outcome_unknown)
    const starts = s
      .effects()
      .filter(
        (e) => e.tool === 'effect_once' && e.phase === 'start' && ids.some((id) => String(e.key).startsWith(`${id}:`)),
      );
    expect(starts.length).toBe(new Set(starts.map((e) => e.key)).size);
    for (const id of ids) {
      expect(checkEvents((await s.a.events(id)).events), id).toEqual([]);
      expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!), id).toEqual([]);
    }
  }, 180_000);
});
