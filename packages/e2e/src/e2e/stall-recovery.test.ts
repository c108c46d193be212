import { afterEach, describe, expect, it } from 'vitest';
import { checkEvents, checkTranscript, stepOf, type Script } from '@agentloop/testing';
import { ProcessStack, type RoleProcess } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

/**
 * Stalls, not crashes: a process paused with SIGSTOP past its lock (a blocked event loop, a paused VM, a long GC) has
 * its job handed on by BullMQ while it is still alive. When it wakes (SIGCONT) it must change nothing: each call is
 * recorded once, a retry:"never" call runs once, no event gap, no garbled stream.
 */
describe('stall recovery (SIGSTOP past the lock, then SIGCONT)', () => {
  let s: ProcessStack | undefined;
  // a 6 s lock: long enough that a process merely starved by a loaded CI machine keeps its jobs (the exact counts
  // below are about the process this test stops, not about one the machine slowed)
  const env = { AGENTLOOP_LOCK_MS: '6000' };
  afterEach(async () => {
    for (const p of s?.procs.values() ?? []) p.child.kill('SIGCONT'); // never leave a stopped process behind
    await s?.stop();
    s = undefined;
  });

  const byPid = (pid: number): RoleProcess => [...s!.procs.values()].find((p) => p.child.pid === pid)!;
  /** The stalled process's count of refused writes (its own metrics endpoint, from its ready line). */
  const fencedCount = async (p: RoleProcess, step: string): Promise<number> => {
    const url = /metrics=(\S+)/.exec(p.output.find((l) => l.startsWith('agentloop ready')) ?? '')?.[1];
    const text = await (await fetch(url!)).text();
    const m = new RegExp(`^agentloop_fenced_writes_total\\{step="${step}"\\} (\\d+)`, 'm').exec(text);
    return Number(m?.[1] ?? 0);
  };
  const callEvents = (events: Array<{ type: string; data: Record<string, unknown> }>) =>
    events.filter((e) => e.type === 'tool.call').map((e) => e.data.status);

  it('a retry:"never" call whose runner stalls runs once: the runner holding its job answers outcome_unknown, the stalled result is refused', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'effect_once', args: { ms: 3000 } }] }
        : { text: `saw: ${req.messages.at(-1)?.content}` };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'tool-runner#2'], { script, env });
    const id = await s.a.startRun({
      input: 'once',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect_once'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    const stalled = byPid(s.effects().find((e) => e.phase === 'start')!.pid as number);
    stalled.child.kill('SIGSTOP');
    const snap = await s.a.waitTerminal(id, 60_000); // the other runner takes the job once the lock expires
    stalled.child.kill('SIGCONT');
    expect(snap.status).toBe('completed');
    expect(snap.output).toContain('outcome_unknown');
    await until('the stalled runner to finish its call', () => s!.effects().some((e) => e.phase === 'end'));
    await until('its result to be refused', async () => (await fencedCount(stalled, 'tool_result')) === 1);
    expect(s.effects().filter((e) => e.phase === 'start')).toHaveLength(1);
    const events = (await s.a.events(id)).events;
    expect(callEvents(events)).toEqual(['proposed', 'running', 'error']);
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(stalled.output.some((l) => l.includes('stale delivery'))).toBe(true);
  }, 120_000);

  it('a retry:"safe" call whose runner stalls is taken over and run again with the same key; only the new owner\'s result is recorded', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'effect', args: { ms: 3000, label: 's' } }] } : { text: 'done' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'tool-runner#2'], { script, env });
    const id = await s.a.startRun({
      input: 'go',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    const stalled = byPid(s.effects().find((e) => e.phase === 'start')!.pid as number);
    stalled.child.kill('SIGSTOP');
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', output: 'done' });
    stalled.child.kill('SIGCONT');
    await until(
      'the stalled runner to finish its call',
      () => s!.effects().filter((e) => e.phase === 'end').length === 2,
    );
    await until('its result to be refused', async () => (await fencedCount(stalled, 'tool_result')) === 1);
    const starts = s.effects().filter((e) => e.phase === 'start');
    expect(starts).toHaveLength(2);
    expect(new Set(starts.map((e) => e.key)).size).toBe(1);
    expect(new Set(starts.map((e) => e.pid)).size).toBe(2);
    const events = (await s.a.events(id)).events;
    expect(callEvents(events)).toEqual(['proposed', 'running', 'completed']);
    expect(checkEvents(events)).toEqual([]);
    expect(s.mock.requests).toHaveLength(2);
  }, 120_000);

  it('an orchestrator that stalls mid-stream is fenced: the new owner tells clients to discard, the stalled stream adds nothing', async () => {
    const words = Array.from({ length: 200 }, (_, i) => `w${i}`).join(' ');
    const script: Script = () => ({ text: `Answer: ${words}`, chunking: 'fine', delayMs: 40 });
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script, env });
    const id = await s.a.startRun({ input: 'stream', model: { provider: 'openai', name: 'gpt-4o-mini' } });
    await until('deltas', async () =>
      (await s!.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
    );
    await s.spawn('orchestrator#2');
    const stalled = s.procs.get('orchestrator')!;
    stalled.child.kill('SIGSTOP');
    const snap = await s.a.waitTerminal(id, 60_000);
    stalled.child.kill('SIGCONT');
    expect(snap).toMatchObject({ status: 'completed', output: `Answer: ${words}` });
    // what it still had streamed is refused: its deltas' append, or (the stream already over) its checkpoint
    await until(
      'the stalled delivery to be refused',
      async () => (await fencedCount(stalled, 'model_events')) + (await fencedCount(stalled, 'checkpoint')) >= 1,
    );
    const events = (await s.a.events(id)).events;
    expect(checkEvents(events)).toEqual([]);
    const retry = events.findLast((e) => e.type === 'llm.retry');
    expect(retry?.data).toMatchObject({ discardOutput: true });
    const after = events
      .slice(events.indexOf(retry!))
      .filter((e) => e.type === 'message.delta')
      .map((e) => e.data.text)
      .join('');
    expect(after).toBe(snap.output);
    expect(events.filter((e) => e.type === 'run.completed')).toHaveLength(1);
  }, 120_000);
});

describe('a compressor that stalls mid-summary', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    for (const p of s?.procs.values() ?? []) p.child.kill('SIGCONT');
    await s?.stop();
    s = undefined;
  });

  it('is handed on: the other compressor summarizes again and the run completes, its events and transcript intact', async () => {
    const { SUMMARIZE_SYSTEM } = await import('@agentloop/llm');
    let calls = 0;
    let summaries = 0;
    const script: Script = (req) => {
      // the first summary streams for several seconds: long enough to be stalled mid-way whatever the machine's load
      if (req.messages[0]?.content === SUMMARIZE_SYSTEM)
        return { text: '- earlier results summarized', chunking: 'fine', delayMs: (summaries += 1) === 1 ? 2000 : 50 };
      return req.tools.length && calls < 6
        ? ((calls += 1), { toolCalls: [{ name: 'big', args: { n: 3000 + calls } }] })
        : { text: `done after ${calls}` };
    };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'compressor'], {
      script,
      contextWindows: { 'gpt-4o-mini': 4000 },
      env: { AGENTLOOP_LOCK_MS: '6000' },
    });
    const id = await s.a.startRun({
      input: 'fetch',
      model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 4000 },
      tools: ['big'],
    });
    await until(
      'a summarization request',
      () => s!.mock.requests.some((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM),
      30_000,
    );
    // the only compressor is the one summarizing: a second one comes up, then the first stalls past its lock
    await s.spawn('compressor#2');
    const first = s.procs.get('compressor')!;
    first.child.kill('SIGSTOP');
    const summariesBefore = s.mock.requests.filter((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM).length;
    const snap = await s.a.waitTerminal(id, 90_000);
    first.child.kill('SIGCONT');
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    const events = (await s.a.events(id)).events;
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(events.some((e) => e.type === 'context.compressed' && e.data.strategy === 'summarize')).toBe(true);
    // the stalled summary was taken over: the second compressor asked the model again
    expect(s.mock.requests.filter((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM).length).toBeGreaterThan(
      summariesBefore,
    );
  }, 150_000);
});

describe('a tool that kills its runner', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('cannot crash-loop its pool: after a few stalls its call is answered tool_error and the run goes on', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'kill_runner', args: {} }] }
        : { text: `saw: ${req.messages.at(-1)?.content}` };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({
      input: 'crash',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['kill_runner'],
    });
    // a supervisor (Kubernetes) restarts each runner the tool killed
    let restarts = 0;
    let over = false;
    const supervise = (async () => {
      while (!over && restarts < 10) {
        const runner = [...s!.procs.values()].find((p) => p.name.startsWith('tool-runner'));
        if (!runner) return;
        await runner.exited;
        if (over) return;
        s!.procs.delete(runner.name);
        await s!.spawn(`tool-runner#${(restarts += 1) + 1}`);
      }
    })().catch(() => undefined);
    const snap = await s.a.waitTerminal(id, 90_000);
    over = true;
    expect(snap.status).toBe('completed');
    expect(snap.output).toContain('tool_error');
    const starts = s.effects().filter((e) => e.tool === 'kill_runner').length;
    expect(starts).toBeGreaterThanOrEqual(2);
    expect(starts).toBeLessThanOrEqual(3); // TOOL_MAX_STALLS + 1 executions at most, not a hundred
    const events = (await s.a.events(id)).events;
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    await Promise.race([supervise, new Promise((r) => setTimeout(r, 100))]);
  }, 150_000);
});
