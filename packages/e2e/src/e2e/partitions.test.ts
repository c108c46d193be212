import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue, QueueEvents, type Job } from 'bullmq';
import { QUEUES, type ResultJob } from '@agentloop/protocol';
import { hashPartition } from '@agentloop/runtime';
import { stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { blockingConnection, byScenario, finishedRun, until } from '../test-support/helpers.js';

const P = 3;
const ADMIN_KEY = 'admin-key-for-partition-tests-0123';
const model = { provider: 'openai', name: 'gpt-4o-mini' };
const users = (req: MockRequest) => req.messages.filter((m) => m.role === 'user').map((m) => String(m.content));
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  // parks for approval of send_email, then answers with its result
  email: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
      : { text: `after: ${stepResults(req, 0)[0]}` },
  slow: (req) => ({ text: `slow answer to ${users(req).at(-1)} ${'x '.repeat(100)}`, chunking: 'fine', delayMs: 20 }),
  // the user turns the model saw, so a thread's carried conversation shows
  seen: (req) => ({ text: `seen [${users(req).join(' | ')}]` }),
};
const script = byScenario(scenarios, 'seen');
const runBody = (scenario: string, extra: Record<string, unknown> = {}) => ({
  input: `[${scenario}] ${Math.random().toString(36).slice(2, 8)}`,
  model,
  tools: ['send_email'],
  ...extra,
});

/** Partition p's prefix as the product derives it (partitionPrefixes): `{…}` hash tags on a cluster. */
const prefixOf = (s: InProcessStack | ProcessStack, p: number) => {
  const name = p === 0 ? s.prefix : `${s.prefix}-${p}`;
  return s.clusterNodes ? `{${name}}` : name;
};
/** The partition whose keys hold the run (-1: none). */
async function partitionOfRun(s: InProcessStack | ProcessStack, runId: string): Promise<number> {
  for (let p = 0; p < P; p++) if (await s.redis.exists(`${prefixOf(s, p)}:run:{${runId}}`)) return p;
  return -1;
}
/** A name with `label` in it that hashes (hashPartition, with `salt` before it) to partition p. */
function nameIn(p: number, salt: string, label: string): string {
  for (let i = 0; ; i++) if (hashPartition(`${salt}${label}-${i}`, P) === p) return `${label}-${i}`;
}
const created = (r: { status: number; json: any; text: string }) => {
  expect(r.status, r.text).toBe(202);
  return r.json.id as string;
};

describe('partitions (AGENTLOOP_PARTITIONS=3, SPEC §1): runs spread over them, and every rule holds across them', () => {
  let s: InProcessStack;
  let results: Queue;
  let requests: Queue;
  let decisions: Queue;
  let queueEvents: QueueEvents;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script,
      env: {
        AGENTLOOP_PARTITIONS: String(P),
        AGENTLOOP_TENANT_LIMITS: JSON.stringify({ 'tenant-b': { activeRuns: 2 } }),
        AGENTLOOP_ADMIN_KEY: ADMIN_KEY,
      },
    });
    // the queues backends use are one for the deployment, under its own prefix
    requests = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    results = new Queue(QUEUES.results, { connection: s.redis, prefix: s.keyPrefix });
    decisions = new Queue(QUEUES.decisions, { connection: s.redis, prefix: s.keyPrefix });
    queueEvents = new QueueEvents(QUEUES.requests, { connection: blockingConnection(s.redis), prefix: s.keyPrefix });
    await queueEvents.waitUntilReady();
  }, 30_000);
  afterAll(async () => {
    await queueEvents?.close();
    await queueEvents?.disconnect();
    await Promise.all([requests, results, decisions].map((q) => q?.close()));
    await s?.stop();
  });
  const ids: string[] = [];

  it('new runs spread over every partition, each run’s keys in its own partition, and all complete', async () => {
    for (let i = 0; i < 30; i++) ids.push(created(await s.a.createRun(runBody('seen'))));
    for (const id of ids) expect((await s.a.waitTerminal(id)).status).toBe('completed');
    const where = await Promise.all(ids.map((id) => partitionOfRun(s, id)));
    expect(new Set(where)).toEqual(new Set([0, 1, 2])); // (all 30 in two partitions: a chance of 3·(2/3)^30)
    // a drawn id names its partition, so it is found under any partition count
    ids.forEach((id, i) => expect(id.startsWith(where[i] === 0 ? 'run_' : `run_p${where[i]}_`)).toBe(true));
    if (s.clusterNodes) {
      // each partition is one slot of its own: on a cluster, partitions can live on different shards
      const slots = await Promise.all([0, 1, 2].map((p) => s.redis.call('CLUSTER', 'KEYSLOT', `${prefixOf(s, p)}:x`)));
      expect(new Set(slots).size).toBe(3);
    }
  });

  it('the listing merges the partitions: newest first, every run once across pages, and by status', async () => {
    const seen: Array<{ id: string; createdAt: string }> = [];
    let cursor: string | null = null;
    do {
      const page: { status: number; json: any } = await s.a.request(
        'GET',
        `/v1/runs?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status).toBe(200);
      expect(page.json.data.length).toBeLessThanOrEqual(7);
      seen.push(...page.json.data);
      cursor = page.json.nextCursor;
    } while (cursor);
    const listed = seen.map((r) => r.id);
    expect(new Set(listed).size).toBe(listed.length);
    for (const id of ids) expect(listed).toContain(id);
    const times = seen.map((r) => Date.parse(r.createdAt));
    expect(times).toEqual([...times].sort((x, y) => y - x));
    const completed = await s.a.request('GET', '/v1/runs?status=completed&limit=200');
    expect(completed.json.data.every((r: { status: string }) => r.status === 'completed')).toBe(true);
    for (const id of ids) expect(completed.json.data.map((r: { id: string }) => r.id)).toContain(id);
    // another tenant lists none of them
    const theirs = await s.b.request('GET', '/v1/runs?limit=200');
    expect(theirs.json.data.filter((r: { id: string }) => ids.includes(r.id))).toEqual([]);
  });

  it('decisions (HTTP and the decisions queue), events and cancels reach each run in its partition', async () => {
    const paused: string[] = [];
    while (new Set(await Promise.all(paused.map((id) => partitionOfRun(s, id)))).size < P)
      paused.push(created(await s.a.createRun(runBody('email'))));
    for (const id of paused) await s.a.waitFor(id, (r) => r.status === 'paused');
    const [viaQueue, toCancel, ...viaHttp] = paused;
    for (const id of viaHttp) {
      const callId = (await s.a.getRun(id)).json.pending[0]!.callId;
      const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, { decisions: [{ callId, action: 'approve' }] });
      expect(r.status, r.text).toBe(202);
    }
    const callId = (await s.a.getRun(viaQueue!)).json.pending[0]!.callId;
    await decisions.add('decide', {
      tenantId: 'tenant-a',
      runId: viaQueue,
      decisions: [{ callId, action: 'deny', reason: 'not now' }],
    });
    expect((await s.a.cancel(toCancel!)).status).toBe(202);
    for (const id of viaHttp) {
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(snap.output).toMatch(/^after: /);
      expect(events.at(-1)!.type).toBe('run.completed');
    }
    expect((await finishedRun(s.a, viaQueue!)).snap.output).toMatch(/denied by user\. Reason: not now/);
    expect((await s.a.waitTerminal(toCancel!)).status).toBe('cancelled');
    // tenant b cannot see or decide them, in any partition
    for (const id of paused) expect((await s.b.getRun(id)).status).toBe(404);
  });

  it('threads: one run at a time in the thread’s partition, whatever the requests race', async () => {
    const busy = `t-busy-${Date.now()}`;
    const racing = await Promise.all(
      Array.from({ length: 10 }, () => s.a.createRun(runBody('slow', { threadId: busy, tools: [] }))),
    );
    expect(racing.filter((r) => r.status === 202)).toHaveLength(1);
    expect(racing.filter((r) => r.status === 409)).toHaveLength(9);
    await s.a.waitTerminal(racing.find((r) => r.status === 202)!.json.id);
    // enqueue: three runs queued behind each other, each seeing the ones before
    const t = `t-enq-${Date.now()}`;
    const queued = await Promise.all(
      ['one', 'two', 'three'].map((input, i) =>
        new Promise((r) => setTimeout(r, i * 30)).then(() =>
          s.a.createRun({ input, model, threadId: t, threadPolicy: 'enqueue' }),
        ),
      ),
    );
    const tids = queued.map(created);
    for (const id of tids) expect((await s.a.waitTerminal(id)).status).toBe('completed');
    expect((await s.a.getRun(tids[2]!)).json.output).toBe('seen [one | two | three]');
    const where = await Promise.all(tids.map((id) => partitionOfRun(s, id)));
    expect(new Set(where).size).toBe(1);
    const thread = await s.a.request('GET', `/v1/threads/${t}`);
    expect(thread.status).toBe(200);
    expect(thread.json.runs).toEqual(tids);
    expect((await s.b.request('GET', `/v1/threads/${t}`)).status).toBe(404); // another tenant's thread id is another thread
  });

  it('queue intake: a given run id joins its thread’s partition, is found there, and reports on the one results queue', async () => {
    const t = `t-q-${Date.now()}`;
    const first = created(await s.a.createRun({ input: 'hello', model, threadId: t }));
    await s.a.waitTerminal(first);
    const threadPartition = await partitionOfRun(s, first);
    // a run id that hashes to another partition than its thread's
    const runId = nameIn((threadPartition + 1) % P, '', `given-${Date.now()}`);
    const request = { input: 'again', model, threadId: t, threadPolicy: 'enqueue' };
    await Promise.all([1, 2].map(() => requests.add('run', { tenantId: 'tenant-a', runId, request })));
    const snap = await s.a.waitTerminal(runId);
    expect(snap.status).toBe('completed');
    expect(snap.output).toBe('seen [hello | again]');
    expect(await partitionOfRun(s, runId)).toBe(threadPartition);
    let job: Job<ResultJob> | undefined;
    await until('the results job', async () => !!(job = await results.getJob(runId)));
    expect(job!.data).toMatchObject({
      runId,
      tenantId: 'tenant-a',
      status: 'completed',
      output: 'seen [hello | again]',
    });
    expect((await s.a.request('GET', `/v1/threads/${t}`)).json.runs).toEqual([first, runId]);
  });

  it('activeRuns counts the tenant’s runs in every partition; an Idempotency-Key finds its run wherever it is', async () => {
    // three threads of tenant b, one in each partition: its third active run is over its limit of 2
    const salt = 'thread\u0000tenant-b\u0000';
    const [t0, t1, t2] = [0, 1, 2].map((p) => nameIn(p, salt, `lim-${Date.now()}`));
    const one = created(await s.b.createRun(runBody('email', { threadId: t1 })));
    const two = created(await s.b.createRun(runBody('email', { threadId: t2 })));
    expect([await partitionOfRun(s, one), await partitionOfRun(s, two)]).toEqual([1, 2]);
    const third = await s.b.createRun(runBody('email', { threadId: t0 }));
    expect(third.status, third.text).toBe(429);
    expect(third.json.error.code).toBe('rate_limited');
    expect(third.json.error.message).toMatch(/has 2 active runs/);
    for (const id of [one, two]) expect((await s.b.cancel(id)).status).toBe(202);
    for (const id of [one, two]) await s.b.waitTerminal(id);
    expect((await s.b.createRun(runBody('seen', { threadId: t0 }))).status).toBe(202);

    const key = `idem-${Date.now()}`;
    const body = runBody('seen');
    const first = await s.a.createRun(body, { 'idempotency-key': key });
    const repeat = await s.a.createRun(body, { 'idempotency-key': key });
    expect([first.status, repeat.status]).toEqual([202, 200]);
    expect(repeat.json.id).toBe(first.json.id);
    expect((await s.a.createRun(runBody('seen'), { 'idempotency-key': key })).status).toBe(422); // another body
  });

  it('activeRuns holds exactly when creations race in different partitions', async () => {
    const live = async () =>
      (await s.b.request('GET', '/v1/runs?limit=200')).json.data.filter(
        (r: { status: string }) => !['completed', 'failed', 'cancelled'].includes(r.status),
      ).length;
    await until('tenant b to have no active run', async () => (await live()) === 0);
    const salt = 'thread\u0000tenant-b\u0000';
    const threads = [0, 1, 2, 0, 1, 2, 0, 1, 2].map((p, i) => nameIn(p, salt, `race-${i}-${Date.now()}`));
    const racing = await Promise.all(threads.map((threadId) => s.b.createRun(runBody('email', { threadId }))));
    expect(racing.map((r) => r.status).sort()).toEqual([202, 202, 429, 429, 429, 429, 429, 429, 429]);
    for (const r of racing.filter((x) => x.status === 202)) {
      await s.b.waitFor(r.json.id, (x) => x.status === 'paused');
      expect((await s.b.cancel(r.json.id)).status).toBe(202);
      await s.b.waitTerminal(r.json.id);
    }
  });

  it('an idempotency key holds across partitions: over HTTP with another thread (422), and on two requests jobs', async () => {
    const key = `idem-thread-${Date.now()}`;
    const first = await s.a.createRun(
      { input: 'one', model, threadId: `t-i1-${Date.now()}` },
      { 'idempotency-key': key },
    );
    expect(first.status).toBe(202);
    const salt = 'thread\u0000tenant-a\u0000';
    const elsewhere = nameIn(((await partitionOfRun(s, first.json.id)) + 1) % P, salt, `t-i2-${Date.now()}`);
    const other = await s.a.createRun({ input: 'one', model, threadId: elsewhere }, { 'idempotency-key': key });
    expect(other.status, other.text).toBe(422);
    // two jobs (not deduplicated by job id) with one idempotency key and no run id: one run
    const qkey = `idem-q-${Date.now()}`;
    const request = { input: 'queued twice', model };
    const jobs = await Promise.all(
      [1, 2].map((i) =>
        requests.add('run', { tenantId: 'tenant-a', idempotencyKey: qkey, request }, { jobId: `twice-${qkey}-${i}` }),
      ),
    );
    const ids = await Promise.all(jobs.map((j) => j.waitUntilFinished(queueEvents, 20_000) as Promise<{ id: string }>));
    expect(ids[0]!.id).toBe(ids[1]!.id);
    expect((await s.a.waitTerminal(ids[0]!.id)).status).toBe('completed');
  });

  it('a run id given at queue intake is one run across partitions: another tenant’s job with it and a thread is refused', async () => {
    const runId = `order-${Date.now()}`;
    const mine = await requests.add('run', { tenantId: 'tenant-a', runId, request: { input: 'mine', model } });
    await mine.waitUntilFinished(queueEvents, 20_000);
    const salt = 'thread\u0000tenant-b\u0000';
    const home = await partitionOfRun(s, runId);
    const far = nameIn((home + 1) % P, salt, `t-far-${Date.now()}`);
    const theirs = await requests.add('run', {
      tenantId: 'tenant-b',
      runId,
      request: { input: 'theirs', model, threadId: far },
    });
    await expect(theirs.waitUntilFinished(queueEvents, 20_000)).rejects.toThrow(/belongs to another tenant/);
    expect((await s.a.waitTerminal(runId)).output).toBe('seen [mine]');
    expect((await s.b.getRun(runId)).status).toBe(404);
    // nothing of tenant b's run was created in the thread's partition
    const copies = await Promise.all([0, 1, 2].map((p) => s.redis.exists(`${prefixOf(s, p)}:run:{${runId}}`)));
    expect(copies).toEqual([0, 1, 2].map((p) => (p === home ? 1 : 0)));
  });

  it('Bull Board shows every partition’s queues, each under its partition’s prefix', async () => {
    const res = await fetch(`${s.proc.apiUrl}/admin/queues/api/queues`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    expect(res.status).toBe(200);
    const names = ((await res.json()) as { queues: Array<{ name: string }> }).queues.map((q) => q.name);
    expect(names).toEqual(expect.arrayContaining([0, 1, 2].map((p) => `${prefixOf(s, p)}/orchestrator`)));
    expect(names.filter((n) => n.endsWith('requests'))).toEqual(['requests']); // one for the deployment
  });
});

describe('changing the partition count, and processes that serve some partitions (--partitions)', () => {
  let s: ProcessStack;
  beforeAll(async () => {
    s = await ProcessStack.start([], { script, env: { AGENTLOOP_TENANT_LIMITS: '{}' } });
  }, 30_000);
  afterAll(() => s?.stop());
  const withCount = (n: number) => ({ AGENTLOOP_PARTITIONS: String(n) });
  const approve = async (id: string) => {
    const callId = (await s.a.getRun(id)).json.pending[0]!.callId;
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, { decisions: [{ callId, action: 'approve' }] });
    expect(r.status, r.text).toBe(202);
  };

  it('grows from 1 to 3 with runs live; shrinks only once the partitions it drops hold no live run', async () => {
    await s.spawn('all', withCount(1));
    const before = created(await s.a.createRun(runBody('email')));
    await s.a.waitFor(before, (r) => r.status === 'paused');
    await s.kill('all', 'SIGTERM');

    await s.spawn('all', withCount(3));
    await approve(before); // a run of the one-partition deployment, served in partition 0
    expect((await s.a.waitTerminal(before)).status).toBe('completed');
    const salt = 'thread\u0000tenant-a\u0000';
    const inTwo = created(await s.a.createRun(runBody('email', { threadId: nameIn(2, salt, `grow-${Date.now()}`) })));
    expect(await partitionOfRun(s, inTwo)).toBe(2);
    await s.a.waitFor(inTwo, (r) => r.status === 'paused');

    // partition 2 still owes a live (parked) run: one partition would orphan it. The attempt announces the smaller
    // count: the running process places no new run past partition 0 from its next read of it, and serves the rest
    await expect(s.spawn('all#one', withCount(1))).rejects.toThrow(
      /AGENTLOOP_PARTITIONS=1, but partition 2 of the 3 this deployment ran with still owes 1 live run/,
    );
    s.procs.delete('all#one');
    await new Promise((r) => setTimeout(r, 6_000)); // COUNT_WATCH_MS and a margin
    const after = await Promise.all(Array.from({ length: 9 }, () => s.a.createRun({ input: 'after', model })));
    for (const id of after.map(created)) {
      expect(await partitionOfRun(s, id)).toBe(0);
      expect((await s.a.waitTerminal(id)).status).toBe('completed');
    }
    // asked again while it still owes the run, it refuses again (the announcement does not count as adopted)
    await expect(s.spawn('all#one', withCount(1))).rejects.toThrow(/partition 2 of the 3 .* still owes 1 live run/);
    s.procs.delete('all#one');
    await approve(inTwo);
    expect((await s.a.waitTerminal(inTwo)).status).toBe('completed');
    await s.kill('all', 'SIGTERM');
    await s.spawn('all', withCount(1)); // nothing owed in partitions 1 and 2 now (adopted after its settling wait)
    expect((await s.a.getRun(before)).json.status).toBe('completed');
    expect((await s.a.getRun(inTwo)).status).toBe(404); // a dropped partition's finished runs are no longer served
    await s.kill('all', 'SIGTERM');
  }, 60_000);

  it('orchestrators serving partitions 0 and 1,2: a partition with no orchestrator waits, and goes on when one comes', async () => {
    await s.spawn('api', withCount(3));
    await s.spawn('orchestrator#0', withCount(3), ['--partitions', '0']);
    const runs: string[] = [];
    while (new Set(await Promise.all(runs.map((id) => partitionOfRun(s, id)))).size < P)
      runs.push(created(await s.a.createRun({ input: 'placed', model })));
    const where = await Promise.all(runs.map((id) => partitionOfRun(s, id)));
    for (const [i, id] of runs.entries())
      if (where[i] === 0) expect((await s.a.waitTerminal(id)).status).toBe('completed');
    for (const [i, id] of runs.entries()) if (where[i] !== 0) expect((await s.a.getRun(id)).json.status).toBe('queued');
    await s.spawn('orchestrator#12', withCount(3), ['--partitions', '1,2']);
    for (const id of runs) expect((await s.a.waitTerminal(id)).status).toBe('completed');
    await expect(s.spawn('orchestrator#bad', withCount(3), ['--partitions', '3'])).rejects.toThrow(
      /--partitions 3: this deployment has partitions 0 to 2/,
    );
    s.procs.delete('orchestrator#bad');
  });
});
