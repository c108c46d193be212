import { afterEach, describe, expect, it } from 'vitest';
import { checkEvents, checkTranscript, stepOf, type Script } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

describe('crash recovery (kill -9, fresh processes finish the run)', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('tool-runner killed mid-call: the cut-off call runs again with the same idempotency key, a finished call never does', async () => {
    const script: Script = (req) => {
      if (stepOf(req) === 0)
        return {
          toolCalls: [
            { name: 'effect', args: { ms: 0, label: 'fast' } },
            { name: 'effect', args: { ms: 12_000, label: 'slow' } },
          ],
        }; // outlasts the waits before the kill on a slow machine
      return { text: 'both effects done' };
    };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({
      input: 'do it',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
    });
    await until('the slow effect to start', () => s!.effects().some((e) => e.label === 'slow' && e.phase === 'start'));
    // "finished" means its result is recorded (its completed tool.call event), not only that the tool returned
    const fastRecorded = async () =>
      (await s!.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some(
        (e) =>
          e.type === 'tool.call' &&
          e.data.status === 'completed' &&
          (e.data.arguments as { label?: string } | undefined)?.label === 'fast',
      );
    await until('the fast call to be recorded', fastRecorded);
    expect(s.effects().some((e) => e.label === 'slow' && e.phase === 'end')).toBe(false); // the kill still cuts the slow call off
    await s.kill('tool-runner', 'SIGKILL');
    await s.spawn('tool-runner#2');
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap.status).toBe('completed');
    expect(snap.output).toBe('both effects done');
    const effects = s.effects();
    const byLabel = (label: string, phase: string) => effects.filter((e) => e.label === label && e.phase === phase);
    expect(byLabel('fast', 'start')).toHaveLength(1); // finished before the crash: never executed again
    expect(byLabel('slow', 'start')).toHaveLength(2); // cut off: executed again…
    expect(byLabel('slow', 'end')).toHaveLength(1); // …and its effect completed once
    expect(new Set(byLabel('slow', 'start').map((e) => e.key)).size).toBe(1); // with the same idempotency key
    expect(byLabel('slow', 'start')[0]!.key).toMatch(new RegExp(`^${id}:`));
    const full = await s.a.getRun(id, 'messages');
    expect(checkTranscript(full.json.messages!)).toEqual([]);
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
    expect(s.mock.requests).toHaveLength(2); // no model call repeated
  }, 120_000);

  it('a retry:"never" call cut off by a crash is answered outcome_unknown, not run again', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'effect_once', args: { ms: 4000 } }] }
        : { text: `saw: ${req.messages.at(-1)?.content}` };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({
      input: 'once',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect_once'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    await s.kill('tool-runner', 'SIGKILL');
    await s.spawn('tool-runner#2');
    const snap = await s.a.waitTerminal(id, 40_000);
    expect(snap.status).toBe('completed');
    expect(snap.output).toContain('outcome_unknown');
    expect(s.effects().filter((e) => e.phase === 'start')).toHaveLength(1);
  }, 120_000);

  it('orchestrator killed mid-stream: another finishes the iteration, clients are told to discard the partial output', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'lookup', args: { key: 'k' } }] }
        : { text: `Answer: ${words}`, chunking: 'fine', delayMs: 40 };
    // a 10 s lock: a process stalled by a loaded machine keeps its iteration's lock, so no model call is repeated by a
    // second delivery (the exact request count below); the kill -9 is recovered once the lock expires (≤ 15 s)
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_LOCK_MS: '10000' },
    });
    const id = await s.a.startRun({
      input: 'stream',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['lookup'],
    });
    await until('deltas of the final iteration', async () =>
      (await s!.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
    );
    await s.kill('orchestrator', 'SIGKILL');
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap.status).toBe('completed');
    expect(snap.output).toBe(`Answer: ${words}`);
    const events = (await s.a.events(id)).events;
    expect(checkEvents(events)).toEqual([]);
    const retry = events.find((e) => e.type === 'llm.retry');
    expect(retry?.data).toMatchObject({ discardOutput: true, reason: 'worker_restarted' });
    const afterRetry = events
      .slice(events.indexOf(retry!))
      .filter((e) => e.type === 'message.delta')
      .map((e) => e.data.text)
      .join('');
    expect(afterRetry).toBe(snap.output);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(s.mock.requests).toHaveLength(3); // the cut-off call and its retry; the first iteration's response was reused
  }, 120_000);

  it('orchestrator killed while tools run: the recorded response is reused, the model is not called again for it', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'effect', args: { ms: 2500, label: 'x' } }] } : { text: 'done' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_LOCK_MS: '10000' },
    }); // exact request count: see above
    const id = await s.a.startRun({
      input: 'go',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    await s.kill('orchestrator', 'SIGKILL');
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id, 40_000);
    expect(snap.status).toBe('completed');
    expect(s.mock.requests).toHaveLength(2);
    expect(s.effects().filter((e) => e.phase === 'start')).toHaveLength(1);
  }, 120_000);

  it('a parked run survives kill -9 of every process: fresh processes take the decision and finish it', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'lookup', args: { key: 'q' } },
              { name: 'send_email', args: { to: 'a@b.c' } },
            ],
          }
        : { text: 'mailed' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({
      input: 'mail',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['lookup', 'send_email'],
    });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    for (const name of [...s.procs.keys()]) await s.kill(name, 'SIGKILL');
    for (const name of ['api#2', 'orchestrator#2', 'tool-runner#2']) await s.spawn(name);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect(r.json).toEqual({ status: 'resumed', remaining: [] });
    const snap = await s.a.waitTerminal(id, 40_000);
    expect(snap).toMatchObject({ status: 'completed', output: 'mailed' });
    expect(s.effects().filter((e) => e.tool === 'send_email')).toHaveLength(1);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(checkEvents((await s.a.events(id)).events)).toEqual([]);
  }, 120_000);

  it('the compressor killed mid-summary: another compressor finishes the job and the run completes', async () => {
    const { SUMMARIZE_SYSTEM } = await import('@agentloop/llm');
    let calls = 0;
    const script: Script = (req) => {
      if (req.messages[0]?.content === SUMMARIZE_SYSTEM)
        return { text: '- earlier results summarized', chunking: 'fine', delayMs: 300 };
      return req.tools.length && calls < 6
        ? ((calls += 1), { toolCalls: [{ name: 'big', args: { n: 3000 + calls } }] })
        : { text: `done after ${calls}` };
    };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'compressor'], {
      script,
      contextWindows: { 'gpt-4o-mini': 4000 },
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
    await s.kill('compressor', 'SIGKILL');
    await s.spawn('compressor#2');
    const snap = await s.a.waitTerminal(id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    const events = (await s.a.events(id)).events;
    expect(events.some((e) => e.type === 'context.compressed' && e.data.strategy === 'summarize')).toBe(true);
    expect(s.mock.requests.filter((r) => r.messages[0]?.content === SUMMARIZE_SYSTEM).length).toBeGreaterThanOrEqual(2);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
    expect(checkEvents(events)).toEqual([]);
  }, 120_000);

  it('a resumed run whose wall clock runs out before its job starts is offered no tools (the clock is read when the call starts)', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
        : req.tools.length
          ? { toolCalls: [{ name: 'effect', args: { label: 'late' } }] }
          : { text: 'answered without tools' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const t0 = Date.now();
    const id = await s.a.startRun({
      input: 'go',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['send_email', 'effect'],
      limits: { maxWallMs: 4000 },
    });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    await s.kill('orchestrator', 'SIGKILL'); // the resume waits in the queue past the wall clock
    expect(
      (
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
        })
      ).status,
    ).toBe(202);
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + 4500 - Date.now())));
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'budget_exceeded',
      output: 'answered without tools',
    });
    expect(s.mock.requests.map((r) => r.tools.length > 0)).toEqual([true, false]);
    expect(s.effects().filter((e) => e.label === 'late')).toEqual([]);
  }, 120_000);

  it('a run whose wall-clock budget ran out while it waited for an orchestrator gets a final call without tools', async () => {
    const script: Script = (req) =>
      req.tools.length
        ? { toolCalls: [{ name: 'effect', args: { label: 'late' } }] }
        : { text: 'answered without tools' };
    s = await ProcessStack.start(['api', 'tool-runner'], { script }); // no orchestrator yet: the run waits in the queue
    const id = await s.a.startRun({
      input: 'go',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
      limits: { maxWallMs: 300 },
    });
    await new Promise((r) => setTimeout(r, 600));
    await s.spawn('orchestrator');
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'budget_exceeded',
      output: 'answered without tools',
      iteration: 1,
    });
    expect(s.mock.requests.map((r) => r.tools.length)).toEqual([0]);
    expect(s.effects()).toEqual([]);
  }, 120_000);
});
