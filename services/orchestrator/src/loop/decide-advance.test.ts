import { describe, expect, it } from 'vitest';
import { RunRequestSchema } from '@agentloop/protocol';
import type { RunState } from '@agentloop/runtime';
import { chainedIteration, decideAdvance } from './decide-advance.js';

const state = (over: Partial<RunState> = {}, limits: Record<string, unknown> = {}): RunState =>
  ({
    id: 'r',
    tenant: 't',
    status: 'running',
    phase: 'tools',
    iteration: 1,
    createdAt: 1000,
    cancel: '',
    pendingFinal: '',
    callMode: 'tools',
    request: RunRequestSchema.parse({ input: 'x', model: { provider: 'openai', name: 'm' }, limits }),
    ...over,
  }) as RunState;

const usage0 = {
  promptTokens: 0,
  completionTokens: 0,
  reasoningTokens: 0,
  cachedTokens: 0,
  totalTokens: 0,
  costUsd: 0,
  llmCalls: 0,
  toolCalls: 0,
};

describe('decideAdvance (pure)', () => {
  it('starts the first iteration from queued, and the next one after a batch', () => {
    expect(decideAdvance(state({ status: 'queued', phase: 'queued', iteration: 0 }), 1, 2000)).toEqual({
      kind: 'start',
      expectPhase: 'queued',
      callMode: 'tools',
    });
    expect(decideAdvance(state(), 2, 2000)).toEqual({ kind: 'start', expectPhase: 'tools', callMode: 'tools' });
  });
  it('ignores duplicate and stale jobs', () => {
    expect(decideAdvance(state({ iteration: 3 }), 2, 2000).kind).toBe('noop');
    expect(decideAdvance(state({ status: 'completed', phase: 'done' }), 2, 2000).kind).toBe('noop');
  });
  it('resumes an interrupted model call and re-dispatches an interrupted batch', () => {
    expect(decideAdvance(state({ phase: 'model', iteration: 2, callMode: 'max_iterations' }), 2, 2000)).toEqual({
      kind: 'resume_call',
      callMode: 'max_iterations',
    });
    expect(decideAdvance(state({ phase: 'tools', iteration: 2 }), 2, 2000)).toEqual({ kind: 'redispatch' });
  });
  it('lets only the job that started a model call (or its retry: same id) resume it', () => {
    const calling = state({ phase: 'model', iteration: 2, owner: 'r-2' });
    expect(decideAdvance(calling, 2, 2000, 'r-2')).toEqual({ kind: 'resume_call', callMode: 'tools' });
    for (const other of ['r-2-resume', 'r-2-dup']) expect(decideAdvance(calling, 2, 2000, other).kind).toBe('noop');
    // the owner is a delivery (job id @ lock token): a new delivery of the same job may resume — and takes it over
    const delivered = { ...calling, owner: 'r-2@tok-1' };
    expect(decideAdvance(delivered, 2, 2000, 'r-2').kind).toBe('resume_call');
    expect(decideAdvance(delivered, 2, 2000, 'r-2-resume').kind).toBe('noop');
    expect(decideAdvance(state({ phase: 'model', iteration: 2, owner: '' }), 2, 2000, 'any').kind).toBe('resume_call'); // no owner recorded (older runs)
  });
  it('finalizes or fails past maxIterations', () => {
    expect(decideAdvance(state({ iteration: 3 }, { maxIterations: 3 }), 4, 2000)).toMatchObject({
      kind: 'start',
      callMode: 'max_iterations',
    });
    expect(decideAdvance(state({ iteration: 3 }, { maxIterations: 3, onMaxIterations: 'fail' }), 4, 2000)).toEqual({
      kind: 'fail_max_iterations',
    });
  });
  it('finalizes on a pending reason and on the wall clock', () => {
    expect(decideAdvance(state({ pendingFinal: 'loop_detected' }), 2, 2000)).toMatchObject({
      callMode: 'loop_detected',
    });
    expect(decideAdvance(state({}, { maxWallMs: 500 }), 2, 2000)).toMatchObject({ callMode: 'budget_exceeded' });
  });
  it('structured output: the repair call starts in the mode of the answer it repairs, whatever the cap, and is not counted against it', () => {
    const repairAt = (iteration: number) => ({ outputRepair: { iteration, message: 'fix it' } });
    const cases: Array<[string, RunState, number, unknown]> = [
      [
        'a tools-mode answer: the repair call offers tools',
        state({ iteration: 2, ...repairAt(3) }),
        3,
        { kind: 'start', expectPhase: 'tools', callMode: 'tools', repair: true },
      ],
      [
        'at the cap, even with onMaxIterations fail',
        state({ iteration: 3, ...repairAt(4) }, { maxIterations: 3, onMaxIterations: 'fail' }),
        4,
        { kind: 'start', expectPhase: 'tools', callMode: 'tools', repair: true },
      ],
      [
        'a finalize answer: its reason carries over',
        state({ iteration: 4, pendingFinal: 'max_iterations', ...repairAt(5) }, { maxIterations: 3 }),
        5,
        { kind: 'start', expectPhase: 'tools', callMode: 'max_iterations', repair: true },
      ],
      [
        'the wall clock spent: no tools',
        state({ iteration: 2, ...repairAt(3) }, { maxWallMs: 500 }),
        3,
        { kind: 'start', expectPhase: 'tools', callMode: 'budget_exceeded', repair: true },
      ],
      [
        'the tokens spent: no tools',
        state({ iteration: 2, ...repairAt(3), usage: { ...usage0, totalTokens: 900 } }, { maxTotalTokens: 800 }),
        3,
        { kind: 'start', expectPhase: 'tools', callMode: 'budget_exceeded', repair: true },
      ],
      [
        'after the repair call, the cap counts loop iterations only',
        state({ iteration: 3, ...repairAt(3) }, { maxIterations: 3 }),
        4,
        { kind: 'start', expectPhase: 'tools', callMode: 'tools' },
      ],
      [
        '… and applies once they are spent',
        state({ iteration: 4, ...repairAt(3) }, { maxIterations: 3, onMaxIterations: 'fail' }),
        5,
        { kind: 'fail_max_iterations' },
      ],
      [
        'a stale job of the repair iteration is still a noop',
        state({ iteration: 4, ...repairAt(3) }),
        3,
        { kind: 'noop', why: expect.any(String) },
      ],
    ];
    for (const [name, st, k, want] of cases) expect(decideAdvance(st, k, 2000), name).toEqual(want);
  });
  it('cancels first', () => {
    expect(decideAdvance(state({ cancel: 'by user', phase: 'model', iteration: 2 }), 2, 2000)).toEqual({
      kind: 'cancel',
    });
  });
  it('takes a run up where a job that went on in place stopped: only a redelivery of that job, and only past its own iteration', () => {
    const chained = (over: Partial<RunState>) => state({ owner: 'r-2@tok1', iteration: 4, ...over });
    expect(chainedIteration(chained({ phase: 'model' }), 2, 'r-2')).toBe(4); // mid model call: resumed at 4
    expect(
      decideAdvance(chained({ phase: 'model' }), chainedIteration(chained({ phase: 'model' }), 2, 'r-2'), 2000, 'r-2'),
    ).toEqual({ kind: 'resume_call', callMode: 'tools' });
    expect(chainedIteration(chained({ phase: 'tools' }), 2, 'r-2')).toBe(4); // mid local calls: re-dispatched at 4
    expect(decideAdvance(chained({ phase: 'tools' }), 4, 2000, 'r-2')).toEqual({ kind: 'redispatch' });
    expect(chainedIteration(chained({ phase: 'paused' }), 2, 'r-2')).toBe(4); // parked before its expiry job was published
    expect(chainedIteration(chained({ phase: 'model' }), 2, 'r-3')).toBe(2); // another job: its own iteration (a noop)
    expect(chainedIteration(chained({ phase: 'model', owner: 'r-2-resume@t' }), 2, 'r-2')).toBe(2); // an owner id is exact
    expect(chainedIteration(chained({ phase: 'model', iteration: 2 }), 2, 'r-2')).toBe(2);
    expect(chainedIteration(chained({ status: 'completed', phase: 'done' }), 2, 'r-2')).toBe(2); // ended: nothing to take up
    expect(chainedIteration(chained({ phase: 'model' }), 2)).toBe(2); // no job id: no claim
  });
});
