import { afterEach, describe, expect, it } from 'vitest';
import { Queue, UnrecoverableError, Worker } from 'bullmq';
import { QUEUES, advanceJobId, expireJobId } from '@agentloop/protocol';
import { RunStore } from '@agentloop/runtime';
import { checkEvents, checkTranscript, stepOf, type Script } from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { blockingConnection, until } from '../test-support/helpers.js';

/** Runs that no job would ever pick up again: each ends, or finishes, within a bound and says why. */
describe('nothing left stuck', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a deployment without a compressor: a summary nobody writes is given up at its deadline, and the run prunes and completes', async () => {
    const { SUMMARIZE_SYSTEM } = await import('@agentloop/llm');
    let calls = 0;
    const script: Script = (req) => {
      if (req.messages[0]?.content === SUMMARIZE_SYSTEM) return { text: '- summary' };
      return req.tools.length && calls < 6
        ? ((calls += 1), { toolCalls: [{ name: 'big', args: { n: 3000 + calls } }] })
        : { text: `done after ${calls}` };
    };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      contextWindows: { 'gpt-4o-mini': 4000 },
      env: { AGENTLOOP_SUMMARY_DEADLINE_MS: '1500' },
    });
    const id = await s.a.startRun({
      input: 'fetch',
      model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 4000 },
      tools: ['big'],
    });
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    const events = (await s.a.events(id)).events;
    const compressed = events.filter((e) => e.type === 'context.compressed').map((e) => e.data.strategy);
    expect(compressed.length).toBeGreaterThan(0);
    expect(new Set(compressed)).toEqual(new Set(['prune']));
    expect(s.mock.requests.some((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM)).toBe(false); // nobody summarized
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(
      s.procs.get('orchestrator')!.output.some((l) => l.includes('no summary was recorded before its deadline')),
    ).toBe(true);
  }, 120_000);

  /** A stack whose reconciler sweeps often; `remove` deletes a job as a lost AOF tail or a dead process would leave it. */
  const quick = { AGENTLOOP_RECONCILE_MS: '300', AGENTLOOP_POOL_PICKUP_MS: '1500' };
  const model = { provider: 'openai', name: 'gpt-4o-mini' };
  const remove = async (st: { redis: import('ioredis').Redis; keyPrefix: string }, jobId: string) => {
    const q = new Queue(QUEUES.orchestrator, { connection: st.redis, prefix: st.keyPrefix });
    try {
      const job = await q.getJob(jobId);
      await job!.remove({ removeChildren: false });
    } finally {
      await q.close();
    }
  };

  it("a call that no runner of its pool takes up is answered tool_error (retryable) after the pool's bound, and the run goes on", async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'offsite', args: { key: 'k' } },
              { name: 'lookup', args: { key: 'x' } },
            ],
          }
        : {
            text: `saw: ${req.messages
              .filter((m) => m.role === 'tool')
              .map((m) => m.content)
              .join(' | ')}`,
          };
    const st = await InProcessStack.start({ script, pools: ['default'], env: quick }); // no runner serves pool "offsite"
    try {
      const id = await st.a.startRun({ input: 'go', model, tools: ['offsite', 'lookup'] });
      const snap = await st.a.waitTerminal(id, 30_000);
      expect(snap.status).toBe('completed');
      expect(snap.output).toContain('"code":"tool_error"');
      expect(snap.output).toContain('"retryable":true');
      expect(snap.output).toContain('X'); // the other call of the batch ran
      expect(checkEvents((await st.a.events(id)).events)).toEqual([]);
    } finally {
      await st.stop();
    }
  }, 60_000);

  it('a call whose tool job is lost after its checkpoint is published again: the run finishes, no finished call runs twice', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'effect', args: { ms: 10, label: 'e' } },
              { name: 'lookup', args: { key: 'x' } },
            ],
          }
        : {
            text: `done: ${req.messages
              .filter((m) => m.role === 'tool')
              .map((m) => m.content)
              .join(' | ')}`,
          };
    const st = await InProcessStack.start({ script, env: quick });
    const tools = new Queue(QUEUES.tools('default'), { connection: st.redis, prefix: st.keyPrefix });
    try {
      await tools.pause(); // no runner takes a job meanwhile
      const id = await st.a.startRun({ input: 'go', model, tools: ['effect', 'lookup'] });
      await until(
        'the batch to be published',
        async () => (await tools.getJobs(['waiting', 'prioritized'])).filter((j) => j.data.runId === id).length === 2,
      );
      const [lost] = (await tools.getJobs(['waiting', 'prioritized'])).filter(
        (j) => j.data.runId === id && j.data.name === 'lookup',
      );
      await lost!.remove(); // as a lost AOF tail would leave it: the effect's job is there, the lookup's is not
      await tools.resume();
      const snap = await st.a.waitTerminal(id, 30_000);
      expect(snap).toMatchObject({ status: 'completed' });
      expect(snap.output).toContain('"done":true'); // the effect's result
      expect(snap.output).toContain('X'); // the lookup ran, published again by the reconciler
      expect(st.effects().filter((e) => e.phase === 'start')).toHaveLength(1);
      expect(checkEvents((await st.a.events(id)).events)).toEqual([]);
      expect(checkTranscript((await st.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    } finally {
      await tools.close();
      await st.stop();
    }
  }, 60_000);

  it('a call whose tool job failed for good where no runner answered it (no flow parent learns of it) is answered tool_error, and the run goes on', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'offsite', args: { key: 'k' } }] }
        : { text: `saw: ${req.messages.at(-1)?.content}` };
    const st = await InProcessStack.start({
      script,
      pools: ['default'],
      env: { ...quick, AGENTLOOP_POOL_PICKUP_MS: '600000' },
    });
    // a foreign worker of pool "offsite" fails the job for good without answering the call, as a runner that lost Redis would
    const connection = blockingConnection(st.redis);
    const worker = new Worker(
      QUEUES.tools('offsite'),
      async () => {
        throw new UnrecoverableError('the runner lost its tool');
      },
      { connection, prefix: st.keyPrefix },
    );
    try {
      const id = await st.a.startRun({ input: 'go', model, tools: ['offsite'] });
      const snap = await st.a.waitTerminal(id, 30_000);
      expect(snap.status).toBe('completed');
      expect(snap.output).toContain('"code":"tool_error"');
      expect(checkEvents((await st.a.events(id)).events)).toEqual([]);
    } finally {
      await worker.close();
      connection.disconnect();
      await st.stop();
    }
  }, 60_000);

  it('a batch answered whose next iteration was never published (its runner died between the two) goes on', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'offsite', args: { key: 'k' } }] }
        : { text: `saw: ${req.messages.at(-1)?.content}` };
    const st = await InProcessStack.start({
      script,
      pools: ['default'],
      env: { ...quick, AGENTLOOP_POOL_PICKUP_MS: '600000' },
    }); // no runner of pool "offsite"
    const offsite = new Queue(QUEUES.tools('offsite'), { connection: st.redis, prefix: st.keyPrefix });
    try {
      const id = await st.a.startRun({ input: 'go', model, tools: ['offsite'] });
      await until('the call to be published', async () =>
        (await offsite.getJobs(['waiting', 'prioritized'])).some((j) => j.data.runId === id),
      );
      const [job] = (await offsite.getJobs(['waiting', 'prioritized'])).filter((j) => j.data.runId === id);
      // what the runner's delivery did before it died: the result recorded, its job gone (completed by another means)
      const store = new RunStore(st.redis, st.keyPrefix);
      const ev = (status: 'running' | 'completed') => ({
        callId: job!.data.callId,
        name: 'offsite',
        arguments: {},
        status,
      });
      expect(
        await store.calls.recordToolResult(
          id,
          job!.data.callId,
          { status: 'completed', content: 'remote', result: 'remote', durationMs: 1, executed: true },
          ev('completed'),
          ev('running'),
        ),
      ).toBe('recorded');
      await job!.remove();
      const snap = await st.a.waitTerminal(id, 30_000);
      expect(snap).toMatchObject({ status: 'completed', output: 'saw: remote' });
      expect(checkEvents((await st.a.events(id)).events)).toEqual([]);
    } finally {
      await offsite.close();
      await st.stop();
    }
  }, 60_000);

  it('a run in its model call whose job is gone (its process died, the job lost) is published again and completes', async () => {
    const script: Script = () => ({ text: 'answered' });
    s = await ProcessStack.start(['api'], { script, env: quick }); // no orchestrator yet
    const store = new RunStore(s.redis, s.keyPrefix);
    const id = await s.a.startRun({ input: 'go', model });
    await remove(s, advanceJobId(id, 1));
    // the model call was started by a job that no longer exists anywhere
    const started = await store.startIteration(id, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [
        { type: 'run.started', data: {} },
        { type: 'iteration.started', data: { iteration: 1 } },
      ],
      owner: `${advanceJobId(id, 1, 'lost')}@t`,
    });
    expect(typeof started).toBe('object');
    await s.spawn('orchestrator');
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap).toMatchObject({ status: 'completed', output: 'answered' });
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
  }, 60_000);

  it('a parked run whose expire job was lost still expires', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
        : { text: `after: ${req.messages.at(-1)?.content}` };
    const st = await InProcessStack.start({ script, env: quick });
    try {
      const id = await st.a.startRun({
        input: 'mail',
        model,
        tools: ['send_email'],
        approval: { timeoutMs: 1000, onTimeout: 'deny' },
      });
      await st.a.waitFor(id, (r) => r.status === 'paused');
      await remove(st, expireJobId(id, 1));
      const snap = await st.a.waitTerminal(id, 30_000);
      expect(snap.status).toBe('completed');
      expect(snap.output).toContain('denied');
      expect(st.effects().filter((e) => e.tool === 'send_email')).toEqual([]);
    } finally {
      await st.stop();
    }
  }, 60_000);
});
