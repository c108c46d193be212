import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Job } from 'bullmq';
import {
  DeploymentKeys,
  QUEUES,
  RunRequestSchema,
  advanceJobId,
  callIdOfToolJob,
  toolJobId,
} from '@agentloop/protocol';
import { cleanupPrefix, testPrefix, testRedisUrl } from '@agentloop/testing';
import { QueueSet } from './queues.js';
import { MAX_BATCH_WITHOUT_PARENT, RunScheduler } from './run-scheduler.js';

describe('tool job ids (real Redis)', () => {
  let redis: Redis;
  let queues: QueueSet;
  const prefix = testPrefix('jobids');
  beforeAll(() => {
    redis = new Redis(testRedisUrl(), { maxRetriesPerRequest: null });
    queues = new QueueSet(redis, prefix);
  });
  afterAll(async () => {
    await queues.close();
    await cleanupPrefix(redis, prefix);
    redis.disconnect();
  });
  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  /** The runs of a queue's jobs in the order a worker takes them: BullMQ's plain list (oldest first), then the prioritized set. */
  const takeOrder = async (queue: string): Promise<string[]> => {
    const plain = await redis.lrange(`${prefix}:${queue}:wait`, 0, -1);
    const prioritized = await redis.zrange(`${prefix}:${queue}:prioritized`, '0', '-1');
    const jobs = await Promise.all([...plain.reverse(), ...prioritized].map((id) => Job.fromId(queues.get(queue), id)));
    return jobs.map((j) => (j!.data as { runId: string }).runId);
  };

  it("two runs whose ids and call ids join the same around '-' (run a-b call c, run a call b-c) get a tool job each", async () => {
    const scheduler = new RunScheduler(queues);
    const call = (callId: string) => ({ callId, name: 'side_effect', arguments: '{}', pool: 'default' });
    await scheduler.afterCheckpoint({ id: 'a-b', tenant: 'T', request }, 1, [call('c')]);
    await scheduler.afterCheckpoint({ id: 'a', tenant: 'T', request }, 1, [call('b-c')]);
    const jobs = await queues
      .get(QUEUES.tools('default'))
      .getJobs(['waiting', 'prioritized', 'waiting-children', 'delayed']);
    expect(jobs.map((j) => `${j.data.runId}/${j.data.callId}`).sort()).toEqual(['a-b/c', 'a/b-c']);
    for (const j of jobs) expect(callIdOfToolJob(j.data.runId, j.id!)).toBe(j.data.callId);
  });

  it("ranks a run's first iteration in its tenant's own line (fair scheduling): the job's priority is the tenant's queued runs", async () => {
    const scheduler = new RunScheduler(queues);
    const keys = new DeploymentKeys(prefix);
    await redis.zadd(keys.tenantRunsByStatus('busy', 'queued'), 1, 'b1', 2, 'b2', 3, 'b3'); // (createRun indexes a run before its job is added)
    await scheduler.start('b3', true, 'busy');
    await redis.zadd(keys.tenantRunsByStatus('quiet', 'queued'), 4, 'q1');
    await scheduler.start('q1', false, 'quiet');
    await scheduler.start('lost', false); // the reconciler, which knows no tenant: a straggler goes first
    const priority = async (runId: string) => (await Job.fromId(queues.orchestrator, advanceJobId(runId, 1)))?.priority;
    // rank 1 is a plain job (BullMQ's priority 0), which a worker takes before every prioritized one
    expect([await priority('b3'), await priority('q1'), await priority('lost')]).toEqual([3, 0, 0]);
    // the order a worker takes them in: the quiet tenant's run before the busy tenant's third
    expect(await takeOrder(QUEUES.orchestrator)).toEqual(['q1', 'lost', 'b3']);
  });

  it('ranks a first job by the queued count its creation answered, without reading it again', async () => {
    const scheduler = new RunScheduler(queues);
    const keys = new DeploymentKeys(prefix);
    await redis.zadd(keys.tenantRunsByStatus('told', 'queued'), 1, 't1'); // what a read would find: rank 1
    await scheduler.start('t1', true, 'told', 4); // what createRun answered
    expect((await Job.fromId(queues.orchestrator, advanceJobId('t1', 1)))?.priority).toBe(4);
  });

  it("gives every job of a run its tenant's load (fair scheduling): a quiet tenant's new run is taken before a busy tenant's continuations and new runs", async () => {
    const scheduler = new RunScheduler(queues);
    const keys = new DeploymentKeys(prefix);
    await redis.zadd(keys.tenantRunsByStatus('heavy', 'running'), 1, 'h1', 2, 'h2', 3, 'h3');
    const call = { callId: 'c1', name: 'noop', arguments: '{}', pool: 'default' };
    await scheduler.afterCheckpoint({ id: 'h1', tenant: 'heavy', request }, 1, []); // a lone next iteration
    await scheduler.afterCheckpoint({ id: 'h2', tenant: 'heavy', request }, 1, [call]); // a call: the next iteration follows its answer
    await redis.zadd(keys.tenantRunsByStatus('heavy', 'queued'), 4, 'h4');
    await scheduler.start('h4', false, 'heavy');
    await redis.zadd(keys.tenantRunsByStatus('light', 'queued'), 5, 'l1');
    await scheduler.start('l1', false, 'light');
    const priority = async (queue: string, id: string) => (await Job.fromId(queues.get(queue), id))?.priority;
    expect(await priority(QUEUES.orchestrator, advanceJobId('h1', 2))).toBe(3);
    expect(await priority(QUEUES.tools('default'), toolJobId('h2', 'c1'))).toBe(3);
    // the call's job names its batch and has no parent: the delivery that answers it publishes the next iteration
    expect((await Job.fromId(queues.get(QUEUES.tools('default')), toolJobId('h2', 'c1')))?.data.batch).toEqual(['c1']);
    expect(await Job.fromId(queues.orchestrator, advanceJobId('h2', 2))).toBeUndefined();
    await scheduler.afterBatch('h2', 'heavy', 1);
    expect(await priority(QUEUES.orchestrator, advanceJobId('h2', 2))).toBe(3);
    expect(await priority(QUEUES.orchestrator, advanceJobId('h4', 1))).toBe(4); // behind its tenant's 3 running runs
    expect(await priority(QUEUES.orchestrator, advanceJobId('l1', 1))).toBe(0); // rank 1: a plain job
    // a tenant running one run: its jobs rank 1 too (plain), the tool job and the next iteration's alike
    await redis.zadd(keys.tenantRunsByStatus('single', 'running'), 1, 's1');
    await scheduler.afterCheckpoint({ id: 's1', tenant: 'single', request }, 1, [call]);
    await scheduler.afterBatch('s1', 'single', 1);
    expect(await priority(QUEUES.tools('default'), toolJobId('s1', 'c1'))).toBe(0);
    expect((await Job.fromId(queues.orchestrator, advanceJobId('s1', 2)))?.opts.priority).toBeUndefined();
    // BullMQ's plain list, which a worker empties before it takes any prioritized job, holds the light tenant's run alone
    expect(
      (await queues.orchestrator.getJobs(['waiting']))
        .map((j) => j.data.runId)
        .filter((r) => ['h1', 'h2', 'h4', 'l1'].includes(r)),
    ).toEqual(['l1']);
    const order = (await takeOrder(QUEUES.orchestrator)).filter((r) => ['h1', 'h4', 'l1'].includes(r));
    expect(order).toEqual(['l1', 'h1', 'h4']);
  });

  it("runs a parked run's calls that need no decision as children of the next iteration's job (a flow), and a batch in several pools without one", async () => {
    const scheduler = new RunScheduler(queues);
    const call = (callId: string, pool: string) => ({ callId, name: 'noop', arguments: '{}', pool });
    await scheduler.afterCheckpoint(
      { id: 'p1', tenant: 'T', request },
      1,
      [call('c1', 'default')],
      Date.now() + 60_000,
    );
    expect(await (await Job.fromId(queues.orchestrator, advanceJobId('p1', 2)))?.getState()).toBe('waiting-children');
    const child = await Job.fromId(queues.get(QUEUES.tools('default')), toolJobId('p1', 'c1'));
    expect([child?.parentKey, child?.data.batch]).toEqual([
      `${prefix}:${QUEUES.orchestrator}:${advanceJobId('p1', 2)}`,
      undefined,
    ]);
    const batch = [call('a', 'default'), call('b', 'default'), call('c', 'other')];
    await scheduler.afterCheckpoint({ id: 'm1', tenant: 'T', request }, 1, batch);
    for (const c of batch)
      expect((await Job.fromId(queues.get(QUEUES.tools(c.pool)), toolJobId('m1', c.callId)))?.data.batch).toEqual([
        'a',
        'b',
        'c',
      ]);
    expect(await Job.fromId(queues.orchestrator, advanceJobId('m1', 2))).toBeUndefined();
    // a model's batch of thousands of calls would cost the square of its size without a parent: past the bound, a flow
    const many = Array.from({ length: MAX_BATCH_WITHOUT_PARENT + 1 }, (_, i) => call(`x${i}`, 'default'));
    await scheduler.afterCheckpoint({ id: 'w1', tenant: 'T', request }, 1, many);
    expect(await (await Job.fromId(queues.orchestrator, advanceJobId('w1', 2)))?.getState()).toBe('waiting-children');
    const member = await Job.fromId(queues.get(QUEUES.tools('default')), toolJobId('w1', 'x0'));
    expect([member?.parentKey, member?.data.batch]).toEqual([
      `${prefix}:${QUEUES.orchestrator}:${advanceJobId('w1', 2)}`,
      undefined,
    ]);
  });

  it('builds ids that name one (run, call) pair each, and parses them back', () => {
    const pairs: Array<[string, string]> = [
      ['a-b', 'c'],
      ['a', 'b-c'],
      ['a_b', 'c'],
      ['a', '_b-c'],
      ['run_x', 'call_1'],
      ['1', '2'],
    ];
    const ids = pairs.map(([r, c]) => toolJobId(r, c));
    expect(new Set(ids).size).toBe(pairs.length);
    pairs.forEach(([r, c], i) => expect(callIdOfToolJob(r, ids[i]!)).toBe(c));
    for (const id of ids) expect(id).not.toContain(':'); // BullMQ refuses ':' in custom ids
    expect(callIdOfToolJob('a', toolJobId('a-b', 'c'))).toBeNull(); // another run's job names none of this run's calls
    expect(callIdOfToolJob('run_x', 'run_x-call_1')).toBe('call_1'); // a job published by a build before this one
  });
});
