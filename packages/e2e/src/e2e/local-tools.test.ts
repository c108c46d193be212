import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES } from '@agentloop/protocol';
import {
  checkEvents,
  checkTranscript,
  stepOf,
  stepResults,
  type MockRequest,
  type ReplySpec,
} from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun, until } from '../test-support/helpers.js';

const model = { provider: 'openai', name: 'gpt-4o-mini' };
const LOCAL = { AGENTLOOP_LOCAL_TOOLS: 'calculator,sleep' };

/** SPEC §6 local tools: calls that run in the orchestrator's iteration, with no tool job, and every promise kept. */
describe('local tools', () => {
  let s: InProcessStack;
  const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
    mixed: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'calculator', args: { expression: '17*23' } },
              { name: 'effect', args: { label: 'pooled' } },
              { name: 'local_effect', args: { label: 'here' } },
            ],
          }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` },
    alllocal: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'calculator', args: { expression: '2+2' } },
              { name: 'local_effect', args: { label: 'x' } },
            ],
          }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` },
    approve: (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] }
        : { text: `after: ${stepResults(req, 0)[0]}` },
    cancel: (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'local_effect', args: { ms: 4500, label: 'long' } }] }
        : { text: 'done' },
    early: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'local_once', args: {} },
              { name: 'sleep', args: { ms: 4500 } },
            ],
          }
        : { text: 'done' },
    // the second turn reuses the first turn's call id (vLLM-like): the checkpoint renames it
    reuse: (req) =>
      stepOf(req) < 2
        ? { toolCalls: [{ name: 'calculator', args: { expression: `${stepOf(req)}+5` }, id: 'dup_1' }] }
        : { text: `results: ${stepResults(req, 0).join(' | ')} / ${stepResults(req, 1).join(' | ')}` },
    inplace: (req) =>
      stepOf(req) < 3
        ? { toolCalls: [{ name: 'calculator', args: { expression: `${stepOf(req)}+1` } }] }
        : { text: `results: ${[0, 1, 2].map((i) => stepResults(req, i)[0]).join(' | ')}` },
    bigreads: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'local_read', args: { n: 3_000_000 } },
              { name: 'local_read', args: { n: 3_000_000 } },
              { name: 'calculator', args: { expression: '1+2' } },
            ],
          }
        : {
            text: `lengths: ${stepResults(req, 0)
              .map((r) => r.length)
              .join(' ')}`,
          },
    mixedafter: (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'calculator', args: { expression: '1+1' } }] }
        : stepOf(req) === 1
          ? { toolCalls: [{ name: 'effect', args: { label: 'later' } }] }
          : { text: 'done' },
  };
  beforeAll(async () => {
    s = await InProcessStack.start({ script: byScenario(scenarios, 'mixed'), env: LOCAL });
  }, 30_000);
  afterAll(() => s?.stop());
  const metric = async (re: RegExp) => Number(re.exec(await (await fetch(`${s.a.baseUrl}/metrics`)).text())?.[1] ?? 0);
  const toolJobs = async (pool: string) => {
    const q = new Queue(QUEUES.tools(pool), { connection: s.redis, prefix: s.keyPrefix });
    try {
      return (
        (await q.getJobCountByTypes('waiting', 'active', 'completed', 'failed', 'delayed')) +
        (await q.getJobCountByTypes('waiting-children'))
      );
    } finally {
      await q.close();
    }
  };

  it('are in the catalog as pool "local"; the others stay on their pools', async () => {
    const tools = (await s.a.request('GET', '/v1/tools')).json as { data: Array<{ name: string; pool: string }> };
    const pool = (n: string) => tools.data.find((t) => t.name === n)?.pool;
    expect([pool('calculator'), pool('sleep'), pool('local_effect'), pool('local_once')]).toEqual([
      'local',
      'local',
      'local',
      'local',
    ]);
    expect([pool('effect'), pool('current_time'), pool('http_get')]).toEqual(['default', 'default', 'default']);
  });

  it('a mixed batch: local calls run in place, the pooled one on its pool, results in the model order', async () => {
    const before = await metric(/^agentloop_tool_duration_seconds_count\{tool="calculator",pool="local"\} (\d+)/m);
    const id = await s.a.startRun({ input: '[mixed] go', model, tools: ['calculator', 'effect', 'local_effect'] });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.output).toMatch(/^results: \{"value":391\} \| \{[^|]*\} \| \{"done":"here"\}$/);
    expect(
      s.effects().filter((e) => e.tool === 'effect' && e.label === 'pooled' && String(e.key).startsWith(id)).length,
    ).toBeGreaterThan(0);
    const statuses = events
      .filter((e) => e.type === 'tool.call' && e.data.name === 'local_effect')
      .map((e) => e.data.status);
    expect(statuses).toEqual(['proposed', 'running', 'completed']);
    expect(await metric(/^agentloop_tool_duration_seconds_count\{tool="calculator",pool="local"\} (\d+)/m)).toBe(
      before + 1,
    );
    expect(s.effects().filter((e) => e.tool === 'local_effect' && String(e.key).startsWith(id))).toHaveLength(2); // start, end: once
  });

  it('a batch of local calls only publishes no tool job at all', async () => {
    const [beforeLocal, beforeDefault] = [await toolJobs('local'), await toolJobs('default')];
    const id = await s.a.startRun({ input: '[alllocal] go', model, tools: ['calculator', 'local_effect'] });
    const { snap } = await finishedRun(s.a, id);
    expect(snap.output).toBe('results: {"value":4} | {"done":"x"}');
    expect([await toolJobs('local'), await toolJobs('default')]).toEqual([beforeLocal, beforeDefault]);
  });

  /** The orchestrator jobs published for a run (BullMQ's `added` events of the queue). */
  const advanceJobsOf = async (runId: string) => {
    const entries = (await s.redis.xrange(`${s.keyPrefix}:${QUEUES.orchestrator}:events`, '-', '+')) as Array<
      [string, string[]]
    >;
    return entries
      .map(([, f]) => Object.fromEntries(f.flatMap((v, i) => (i % 2 ? [] : [[v, f[i + 1]]]))))
      .filter((e) => e.event === 'added' && String(e.jobId).startsWith(`${runId}-`))
      .map((e) => e.jobId);
  };

  it('a run whose every batch ran locally goes on in the job it started in: one job for all its iterations', async () => {
    const completed = /^agentloop_tool_calls_total\{tool="calculator",status="completed"\} (\d+)/m;
    const before = await metric(completed);
    const predicted = /^agentloop_predicted_starts_total\{outcome="go"\} (\d+)/m;
    const predictedBefore = await metric(predicted);
    const id = await s.a.startRun({ input: '[inplace] go', model, tools: ['calculator'] });
    const { snap, events } = await finishedRun(s.a, id);
    expect(await metric(completed)).toBe(before + 3); // each counted once, recorded with the start behind its checkpoint
    // each next call went out before Redis confirmed its start (predicted), and none was made twice
    expect(await metric(predicted)).toBe(predictedBefore + 3);
    expect(
      s.mock.journal.filter((j) => j.req.messages.some((m) => m.role === 'user' && m.content?.includes('[inplace] go')))
        .length,
    ).toBe(4);
    expect(snap.output).toBe('results: {"value":1} | {"value":2} | {"value":3}');
    expect(snap.iteration).toBe(4);
    expect(events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2, 3, 4]);
    expect(await advanceJobsOf(id)).toEqual([`${id}-1`]);
  });

  it('a call id the run used before is not predicted over: renamed by the checkpoint, one model call per iteration', async () => {
    const outcomes = /^agentloop_predicted_starts_total\{outcome="(\w+)"\} (\d+)/gm;
    const predictions = async () =>
      Object.fromEntries(
        [...(await (await fetch(`${s.a.baseUrl}/metrics`)).text()).matchAll(outcomes)].map((m) => [m[1], Number(m[2])]),
      );
    const before = await predictions();
    const id = await s.a.startRun({ input: '[reuse] go', model, tools: ['calculator'] });
    const { snap } = await finishedRun(s.a, id);
    expect(snap.output).toBe('results: {"value":5} / {"value":6}');
    const calls = s.mock.journal.filter((j) =>
      j.req.messages.some((m) => m.role === 'user' && m.content?.includes('[reuse] go')),
    );
    expect(calls).toHaveLength(3);
    const history = (
      (await s.a.getRun(id, 'history')).json as unknown as { history: Array<{ toolCalls?: Array<{ id: string }> }> }
    ).history;
    const ids = history.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
    expect(ids).toHaveLength(2);
    expect(new Set(ids).size).toBe(2);
    // the first start was predicted and held; after the reused id nothing was predicted, so nothing was dropped
    const after = await predictions();
    expect((after.go ?? 0) - (before.go ?? 0)).toBe(1);
    expect((after.again ?? 0) - (before.again ?? 0)).toBe(0);
  });

  it('local reads too large to ride with the next start are recorded in steps of their own, each once', async () => {
    const completed = /^agentloop_tool_calls_total\{tool="local_read",status="completed"\} (\d+)/m;
    const dropped = /^agentloop_predicted_starts_total\{outcome="again"\} (\d+)/m;
    const before = await metric(completed);
    const droppedBefore = await metric(dropped);
    const id = await s.a.startRun({ input: '[bigreads] go', model, tools: ['local_read', 'calculator'] });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(snap.output).toMatch(/^lengths: \d+ \d+ \d+$/);
    const answered = events
      .filter((e) => e.type === 'tool.call' && e.data.status === 'completed')
      .map((e) => e.data.name);
    expect(answered.sort()).toEqual(['calculator', 'local_read', 'local_read']);
    expect(await metric(completed)).toBe(before + 2);
    expect(await metric(dropped)).toBe(droppedBefore); // no start predicted over reads sent apart (it would be dropped)
    expect(s.effects().filter((e) => e.tool === 'local_read' && String(e.key).startsWith(id))).toHaveLength(2); // each ran once
    expect(await advanceJobsOf(id)).toEqual([`${id}-1`]);
  });

  it("a batch with a pooled call is published as the next iteration's flow, as before", async () => {
    const id = await s.a.startRun({ input: '[mixedafter] go', model, tools: ['calculator', 'effect'] });
    const { snap } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(await advanceJobsOf(id)).toEqual([`${id}-1`, `${id}-3`]); // iteration 2 went on in place; 3 waited for the pool
  });

  it('a local call that needs approval parks the run like any other, and runs locally once approved', async () => {
    const id = await s.a.startRun({
      input: '[approve] go',
      model,
      tools: ['calculator'],
      approval: { require: ['calculator'] },
    });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending).toMatchObject([{ name: 'calculator', pauseType: 'awaiting_approval' }]);
    expect(
      (
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
        })
      ).status,
    ).toBe(202);
    const { snap } = await finishedRun(s.a, id);
    expect(snap.output).toBe('after: {"value":42}');
  });

  it('a call with effects is recorded as soon as it finishes, not when the slowest call of its batch does', async () => {
    const id = await s.a.startRun({ input: '[early] go', model, tools: ['local_once', 'sleep'] });
    const status = async (tool: string) =>
      (await s.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events
        .filter((e) => e.type === 'tool.call' && e.data.name === tool)
        .map((e) => e.data.status);
    await until('the effect to be recorded', async () => (await status('local_once')).includes('completed'));
    expect(await status('sleep')).toEqual(['proposed']); // still running: a crash now would not run the effect again
    expect((await s.a.cancel(id)).status).toBe(202);
    expect((await finishedRun(s.a, id)).snap.status).toBe('cancelled');
  });

  it('cancellation reaches a local call through its signal', async () => {
    const id = await s.a.startRun({ input: '[cancel] go', model, tools: ['local_effect'] });
    await until('the sleep to run', async () =>
      (await s.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some(
        (e) => e.type === 'tool.call' && e.data.status === 'running',
      ),
    );
    const t0 = Date.now();
    expect((await s.a.cancel(id)).status).toBe(202);
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('cancelled');
    expect(Date.now() - t0).toBeLessThan(4000); // not the 4.5 s the call would have taken
    expect(events.filter((e) => e.type === 'tool.call').at(-1)?.data.status).toBe('cancelled');
  });
});

describe('local tools across a crash', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('kill -9 of the orchestrator mid local call: a safe call runs again with the same key, a never call is outcome_unknown', async () => {
    const script = (req: MockRequest): ReplySpec =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'local_effect', args: { ms: 3000, label: 'safe' } },
              { name: 'local_once', args: { ms: 3000 } },
            ],
          }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({ input: 'go', model, tools: ['local_effect', 'local_once'] });
    await until('both local calls to start', () => s!.effects().filter((e) => e.phase === 'start').length === 2);
    await s.kill('orchestrator', 'SIGKILL');
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap.status).toBe('completed');
    const eff = s.effects();
    const safe = eff.filter((e) => e.tool === 'local_effect');
    expect(safe.filter((e) => e.phase === 'start')).toHaveLength(2); // cut off: executed again…
    expect(new Set(safe.map((e) => e.key)).size).toBe(1); // …with the same idempotency key
    expect(safe.filter((e) => e.phase === 'end')).toHaveLength(1);
    expect(eff.filter((e) => e.tool === 'local_once' && e.phase === 'start')).toHaveLength(1); // never again
    expect(snap.output).toContain('{"done":"safe"}');
    expect(snap.output).toContain('outcome_unknown');
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
  }, 120_000);

  it.each([
    ['mid local call', { label: 'safe', ms: 3000 }, 0],
    ['mid model call', { label: 'safe', ms: 10 }, 1],
  ])(
    'kill -9 of the orchestrator %s, in an iteration the job went on to in place: its redelivery takes the run up there',
    async (_, effectArgs, modelDelayMs) => {
      const script = (req: MockRequest): ReplySpec => {
        const step = stepOf(req);
        if (step === 0) return { toolCalls: [{ name: 'calculator', args: { expression: '1+1' } }] };
        if (step === 1)
          return {
            toolCalls: [
              { name: 'local_effect', args: effectArgs },
              { name: 'local_once', args: { ms: effectArgs.ms } },
            ],
          };
        return {
          text: `results: ${stepResults(req, 1).join(' | ')}`,
          ...(modelDelayMs ? { chunking: 'fine' as const, delayMs: 150 } : {}),
        };
      };
      s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script, env: LOCAL }); // calculator local: iteration 2 goes on in job 1
      const id = await s.a.startRun({ input: 'go', model, tools: ['calculator', 'local_effect', 'local_once'] });
      if (modelDelayMs)
        await until(
          'the last model call to stream',
          async () =>
            (await s!.a.events(id, { maxEvents: 500, timeoutMs: 200 })).events.some(
              (e) => e.type === 'message.delta' && e.data.iteration === 3,
            ),
          30_000,
        );
      else
        await until(
          'both local calls of iteration 2 to start',
          () => s!.effects().filter((e) => e.phase === 'start').length === 2,
        );
      await s.kill('orchestrator', 'SIGKILL');
      const next = await s.spawn('orchestrator#2');
      const snap = await s.a.waitTerminal(id, 60_000);
      expect(snap.status).toBe('completed');
      // taken up by the job's redelivery, not by the reconciler that republishes a job nobody would run
      const metrics = await (
        await fetch(/metrics=(\S+)/.exec(next.output.find((l) => l.startsWith('agentloop ready'))!)![1]!)
      ).text();
      expect(metrics).not.toMatch(/^agentloop_runs_reconciled_total\{[^}]*\} [1-9]/m);
      const eff = s.effects();
      const safe = eff.filter((e) => e.tool === 'local_effect' && e.phase === 'start');
      expect(new Set(safe.map((e) => e.key)).size).toBe(1); // run again (cut off) or not, always under the same key
      expect(safe).toHaveLength(modelDelayMs ? 1 : 2); // a finished call is never executed again
      expect(eff.filter((e) => e.tool === 'local_once' && e.phase === 'start')).toHaveLength(1); // never twice
      expect(snap.output).toContain(modelDelayMs ? '{"done":"safe"}' : 'outcome_unknown');
      const events = (await s.a.events(id)).events;
      expect(events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2, 3]);
      expect(checkEvents(events)).toEqual([]);
      expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    },
    120_000,
  );

  it("past the drain deadline, a batch's unfinished local call is handed back; the call that finished keeps its result and never runs again", async () => {
    const script = (req: MockRequest): ReplySpec =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'local_effect', args: { ms: 50, label: 'fast' } },
              { name: 'local_effect', args: { ms: 4000, label: 'slow' } },
            ],
          }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` };
    // a 30 s lock: a stalled job would wait that long; a handed-back one is retried at once
    s = await ProcessStack.start(['api', 'orchestrator', 'orchestrator#2', 'tool-runner'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '300', AGENTLOOP_LOCK_MS: '30000' },
    });
    const id = await s.a.startRun({ input: 'go', model, tools: ['local_effect'] });
    await until('the fast call to end', () => s!.effects().some((e) => e.label === 'fast' && e.phase === 'end'));
    const pid = s.effects().find((e) => e.label === 'slow')!.pid as number;
    const name = [...s.procs.entries()].find(([, p]) => p.child.pid === pid)![0];
    s.procs.get(name)!.child.kill('SIGTERM');
    expect(await s.procs.get(name)!.exited).toBe(0);
    s.procs.delete(name);
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap.status).toBe('completed');
    const starts = (label: string) => s!.effects().filter((e) => e.label === label && e.phase === 'start');
    expect(starts('fast')).toHaveLength(1); // recorded with the batch before the hand-back: not run again
    expect(starts('slow')).toHaveLength(2); // handed back, run again…
    expect(new Set(starts('slow').map((e) => e.key)).size).toBe(1); // …with the same idempotency key
    expect(snap.output).toContain('{"done":"fast"}');
    expect(snap.output).toContain('{"done":"slow"}');
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
  }, 120_000);

  it('an orchestrator that comes back from a stall while the other one runs its local call again does not start the next iteration over it', async () => {
    const script = (req: MockRequest): ReplySpec =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'local_effect', args: { ms: 3000, label: 'safe' } }] }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` };
    s = await ProcessStack.start(['api', 'orchestrator', 'orchestrator#2', 'tool-runner'], {
      script,
      env: { AGENTLOOP_LOCK_MS: '6000' },
    });
    try {
      const id = await s.a.startRun({ input: 'go', model, tools: ['local_effect'] });
      await until('the call to start', () => s!.effects().some((e) => e.phase === 'start'));
      const pid = s.effects().find((e) => e.phase === 'start')!.pid as number;
      const stalled = [...s.procs.values()].find((p) => p.child.pid === pid)!;
      stalled.child.kill('SIGSTOP');
      // the other orchestrator takes the iteration over once the lock expires, and runs the call again (3 s)…
      await until(
        'the call to run again elsewhere',
        () => s!.effects().some((e) => e.phase === 'start' && e.pid !== pid),
        60_000,
      );
      stalled.child.kill('SIGCONT'); // …while the stalled one wakes up with its own call long finished
      const snap = await s.a.waitTerminal(id, 60_000);
      expect(snap.status).toBe('completed');
      expect(snap.output).toBe('results: {"done":"safe"}'); // the taker's result, not a job_failed answer to a call it was running
      const url = /metrics=(\S+)/.exec(stalled.output.find((l) => l.startsWith('agentloop ready')) ?? '')?.[1];
      await until('the stalled result to be refused', async () =>
        /^agentloop_fenced_writes_total\{step="tool_result"\} 1$/m.test(await (await fetch(url!)).text()),
      );
      expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
      expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    } finally {
      for (const p of s.procs.values()) p.child.kill('SIGCONT');
    }
  }, 120_000);

  it('an orchestrator stalled mid local call (SIGSTOP past its lock): the other one owns the calls — the safe one runs again with the same key, the never one is outcome_unknown and never runs twice; the stalled results are refused', async () => {
    const script = (req: MockRequest): ReplySpec =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'local_effect', args: { ms: 3000, label: 'safe' } },
              { name: 'local_once', args: { ms: 3000 } },
            ],
          }
        : { text: `results: ${stepResults(req, 0).join(' | ')}` };
    // a 6 s lock: a process only starved by a loaded machine keeps its job
    s = await ProcessStack.start(['api', 'orchestrator', 'orchestrator#2', 'tool-runner'], {
      script,
      env: { AGENTLOOP_LOCK_MS: '6000' },
    });
    try {
      const id = await s.a.startRun({ input: 'go', model, tools: ['local_effect', 'local_once'] });
      await until('both local calls to start', () => s!.effects().filter((e) => e.phase === 'start').length === 2);
      const pid = s.effects().find((e) => e.phase === 'start')!.pid as number;
      const stalled = [...s.procs.values()].find((p) => p.child.pid === pid)!;
      stalled.child.kill('SIGSTOP');
      const snap = await s.a.waitTerminal(id, 60_000); // the other orchestrator takes the iteration once the lock expires
      stalled.child.kill('SIGCONT');
      expect(snap.status).toBe('completed');
      await until(
        'the stalled calls to end',
        () => s!.effects().filter((e) => e.phase === 'end' && e.pid === pid).length === 2,
      );
      const url = /metrics=(\S+)/.exec(stalled.output.find((l) => l.startsWith('agentloop ready')) ?? '')?.[1];
      await until('the stalled results to be refused', async () =>
        /^agentloop_fenced_writes_total\{step="tool_result"\} 2$/m.test(await (await fetch(url!)).text()),
      );
      const eff = s.effects();
      const safe = eff.filter((e) => e.tool === 'local_effect' && e.phase === 'start');
      expect(safe.map((e) => e.pid === pid)).toEqual([true, false]); // run again, by the other orchestrator…
      expect(new Set(safe.map((e) => e.key)).size).toBe(1); // …with the same idempotency key
      expect(eff.filter((e) => e.tool === 'local_once' && e.phase === 'start')).toHaveLength(1); // never twice
      expect(snap.output).toContain('{"done":"safe"}');
      expect(snap.output).toContain('outcome_unknown');
      const events = (await s.a.events(id)).events;
      const statuses = events.filter((e) => e.type === 'tool.call').map((e) => (e.data as { status: string }).status);
      expect(statuses.filter((x) => x !== 'proposed' && x !== 'running').sort()).toEqual(['completed', 'error']); // each call answered once
      expect(checkEvents(events)).toEqual([]);
      expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    } finally {
      for (const p of s.procs.values()) p.child.kill('SIGCONT'); // never leave a stopped process behind
    }
  }, 120_000);
});
