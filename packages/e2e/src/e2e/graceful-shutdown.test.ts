import { afterEach, describe, expect, it } from 'vitest';
import { checkEvents, checkTranscript, stepOf, type Script } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

describe('SIGTERM drains (SPEC §1)', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a tool-runner finishes its tool call before exiting 0; nothing runs twice', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'effect', args: { ms: 1500, label: 'long' } }] } : { text: 'done' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '10000', AGENTLOOP_LOCK_MS: '10000' },
    }); // a long lock: a stalled process keeps its job (nothing runs twice)
    const id = await s.a.startRun({
      input: 'x',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    const runner = s.procs.get('tool-runner')!;
    runner.child.kill('SIGTERM');
    expect(await runner.exited).toBe(0);
    expect(s.effects().filter((e) => e.phase === 'end')).toHaveLength(1); // it finished before exiting
    s.procs.delete('tool-runner');
    const snap = await s.a.waitTerminal(id);
    expect(snap).toMatchObject({ status: 'completed', output: 'done' });
    expect(s.effects().filter((e) => e.phase === 'start')).toHaveLength(1);
  });

  it('an orchestrator finishes the model stream it is reading before exiting; another takes the next iteration', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    const script: Script = (req) =>
      stepOf(req) === 0
        ? { text: words, chunking: 'fine', delayMs: 25, toolCalls: [{ name: 'lookup', args: { key: 'a' } }] }
        : { text: 'final' };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '10000', AGENTLOOP_LOCK_MS: '10000' },
    }); // a long lock: a stalled process keeps its job (nothing runs twice)
    const id = await s.a.startRun({
      input: 'x',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['lookup'],
    });
    await until('the stream to start', async () =>
      (await s!.a.events(id, { maxEvents: 50, timeoutMs: 200 })).events.some((e) => e.type === 'message.delta'),
    );
    const orch = s.procs.get('orchestrator')!;
    orch.child.kill('SIGTERM');
    expect(await orch.exited).toBe(0);
    s.procs.delete('orchestrator');
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id);
    expect(snap).toMatchObject({ status: 'completed', output: 'final' });
    const events = (await s.a.events(id)).events;
    expect(events.some((e) => e.type === 'llm.retry')).toBe(false);
    expect(s.mock.requests).toHaveLength(2);
    expect(checkEvents(events)).toEqual([]);
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
  });

  it('past the drain deadline, an unfinished tool call is handed back and another tool-runner takes it at once', async () => {
    const script: Script = (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'effect', args: { ms: 4000, label: 'slow' } }] } : { text: 'done' };
    // a 30 s lock: a stalled job would wait that long; a handed-back one is retried within a second
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'tool-runner#2'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '300', AGENTLOOP_LOCK_MS: '30000' },
    });
    const id = await s.a.startRun({
      input: 'x',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['effect'],
    });
    await until('the effect to start', () => s!.effects().some((e) => e.phase === 'start'));
    const first = s.effects().find((e) => e.phase === 'start')!;
    const name = [...s.procs.entries()].find(([, p]) => p.child.pid === first.pid)![0];
    const t0 = Date.now();
    s.procs.get(name)!.child.kill('SIGTERM');
    expect(await s.procs.get(name)!.exited).toBe(0);
    s.procs.delete(name);
    await until(
      'another tool-runner to take the call',
      () => s!.effects().filter((e) => e.phase === 'start').length === 2,
      20_000,
    );
    expect(Date.now() - t0).toBeLessThan(15_000); // not the stalled-job path, which waits for the 30 s lock to expire
    const snap = await s.a.waitTerminal(id, 30_000);
    expect(snap.status).toBe('completed');
    const starts = s.effects().filter((e) => e.phase === 'start');
    expect(new Set(starts.map((e) => e.key)).size).toBe(1); // the same call, same idempotency key
    expect(s.effects().filter((e) => e.phase === 'end')).toHaveLength(1);
  }, 120_000);
});
