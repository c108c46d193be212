import { describe, expect, it } from 'vitest';
import { RunRequestSchema, type CallMode, type ToolCall } from '@agentloop/protocol';
import { PriceTable, type ModelResponse } from '@agentloop/llm';
import type { CatalogEntry, RunState } from '@agentloop/runtime';
import { planResponse } from './plan-response.js';

const entry = (name: string, sideEffect: CatalogEntry['sideEffect']): CatalogEntry => ({
  name,
  description: '',
  parameters: {},
  sideEffect,
  pool: 'default',
  timeoutMs: 1000,
  retry: 'safe',
});
const catalog = new Map([entry('read_it', 'read'), entry('mail', 'external')].map((e) => [e.name, e]));
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
const state = (over: Record<string, unknown> = {}): RunState =>
  ({
    id: 'r',
    tenant: 't',
    status: 'running',
    phase: 'model',
    iteration: 2,
    createdAt: 0,
    cancel: '',
    pendingFinal: '',
    callMode: 'tools',
    repeatFingerprint: '',
    repeatCount: 0,
    usage: usage0,
    request: RunRequestSchema.parse({
      input: 'x',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['read_it', 'mail'],
      ...over,
    }),
  }) as unknown as RunState;
const response = (calls: ToolCall[] | null, text: string | null = null): ModelResponse =>
  ({
    message: { role: 'assistant', content: text, ...(calls ? { toolCalls: calls } : {}) },
    usage: { promptTokens: 1000, completionTokens: 100, reasoningTokens: 0, cachedTokens: 0 },
    finishReason: calls ? 'tool_calls' : 'stop',
    provider: 'openai',
    model: 'gpt-4o-mini',
  }) as ModelResponse;
const call = (name: string, args: unknown = {}, id = `c_${name}`): ToolCall => ({
  id,
  name,
  arguments: JSON.stringify(args),
});
const plan = (st: RunState, res: ModelResponse, callMode: CallMode = 'tools') =>
  planResponse({ st, k: 2, callMode, response: res, tailDeltas: [], catalog, prices: new PriceTable(), nowMs: 1000 });
const statuses = (p: ReturnType<typeof plan>) =>
  p.checkpoint.events.filter((e) => e.type === 'tool.call').map((e) => `${e.data.callId}:${e.data.status}`);

describe('planResponse (pure)', () => {
  const cases: Array<{
    name: string;
    st: RunState;
    res: ModelResponse;
    callMode?: CallMode;
    expect: (p: ReturnType<typeof plan>) => void;
  }> = [
    {
      name: 'a text answer completes the run (final_answer), billing the call',
      st: state(),
      res: response(null, 'done'),
      expect: (p) => {
        expect(p.final).toEqual({ stopReason: 'final_answer', output: 'done' });
        expect(p.checkpoint.events.map((e) => e.type)).toEqual(['iteration.completed', 'run.completed']);
        expect(p.totals).toMatchObject({ promptTokens: 1000, completionTokens: 100, llmCalls: 1 });
        expect(p.iterationUsage.costUsd).toBeCloseTo((1000 * 0.15 + 100 * 0.6) / 1e6);
      },
    },
    {
      name: 'a finalize call that still names a tool completes with its reason, the stray call dropped',
      st: state(),
      res: response([call('read_it')], 'best answer'),
      callMode: 'max_iterations',
      expect: (p) => {
        expect(p.final).toEqual({ stopReason: 'max_iterations', output: 'best answer' });
        expect(p.message.toolCalls).toBeUndefined();
        expect(p.toRun).toEqual([]);
      },
    },
    {
      name: 'runnable calls are dispatched; an external one pauses the run',
      st: state(),
      res: response([call('read_it'), call('mail')]),
      expect: (p) => {
        expect(p.final).toBeNull();
        expect(p.toRun.map((c) => c.callId)).toEqual(['c_read_it']);
        expect(p.pause).toMatchObject({
          pending: [{ callId: 'c_mail', pauseType: 'awaiting_approval' }],
          expiresAt: 1000 + 86_400_000,
        });
        expect(statuses(p)).toEqual(['c_read_it:proposed', 'c_mail:proposed', 'c_mail:awaiting_approval']);
        expect(p.checkpoint.events.at(-1)!.type).toBe('run.paused');
      },
    },
    {
      name: 'headless: a call that would pause is denied and the run goes on',
      st: state({ mode: 'headless' }),
      res: response([call('mail')]),
      expect: (p) => {
        expect(p.pause).toBeUndefined();
        expect(statuses(p)).toEqual(['c_mail:proposed', 'c_mail:denied']);
      },
    },
    {
      name: 'a spent token budget answers the whole batch skipped and finalizes next',
      st: state({ limits: { maxTotalTokens: 500 } }),
      res: response([call('read_it')]),
      expect: (p) => {
        expect(p.toRun).toEqual([]);
        expect(p.checkpoint.pendingFinal).toBe('budget_exceeded');
        expect(statuses(p)).toEqual(['c_read_it:proposed', 'c_read_it:skipped']);
      },
    },
    {
      name: 'unsafe, repeated and taken ids are renamed; ids stay unique',
      st: state(),
      res: response([
        call('read_it', { a: 1 }, 'x:y'),
        call('read_it', { a: 2 }, 'dup'),
        call('read_it', { a: 3 }, 'dup'),
      ]),
      expect: (p) => {
        const ids = p.message.toolCalls!.map((c) => c.id);
        expect(new Set(ids).size).toBe(3);
        expect(ids[1]).toBe('dup');
        expect(p.toRun.map((c) => c.callId)).toEqual(ids);
      },
    },
  ];
  for (const c of cases) it(c.name, () => c.expect(plan(c.st, c.res, c.callMode)));

  it('is deterministic for the same input (ids kept)', () => {
    const st = state();
    const res = response([call('read_it'), call('mail')]);
    const a = plan(st, res);
    const b = plan(st, res);
    expect(a).toEqual(b);
  });
});

describe('planResponse with output.schema (structured output)', () => {
  const output = { schema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } };
  const st = (over: Record<string, unknown> = {}) => ({ ...state({ output }), ...over }) as RunState;
  const invalid = { ok: false as const, errors: ['/n must be integer'] };
  const run = (
    s: RunState,
    res: ModelResponse,
    outputCheck: Parameters<typeof planResponse>[0]['outputCheck'],
    callMode: CallMode = 'tools',
  ) =>
    planResponse({
      st: s,
      k: 2,
      callMode,
      response: res,
      tailDeltas: [],
      catalog,
      prices: new PriceTable(),
      nowMs: 1000,
      outputCheck,
    });
  const types = (p: ReturnType<typeof run>) => p.checkpoint.events.map((e) => e.type);

  const cases: Array<{ name: string; go: () => ReturnType<typeof run>; expect: (p: ReturnType<typeof run>) => void }> =
    [
      {
        name: 'a valid answer completes the run with outputJson beside the text, in the state and in run.completed',
        go: () => run(st(), response(null, '```json\n{"n":3}\n```'), { ok: true, value: { n: 3 } }),
        expect: (p) => {
          expect(p.final).toEqual({
            stopReason: 'final_answer',
            output: '```json\n{"n":3}\n```',
            outputJson: { n: 3 },
          });
          expect(p.checkpoint.final).toEqual(p.final);
          expect(p.checkpoint.events.at(-1)).toMatchObject({
            type: 'run.completed',
            data: { outputJson: { n: 3 }, output: '```json\n{"n":3}\n```' },
          });
        },
      },
      {
        name: 'a first invalid answer is recorded with the repair turn in the same checkpoint: no calls, the errors in the repair message',
        go: () => run(st(), response(null, '{"n":"three"}'), invalid),
        expect: (p) => {
          expect(p.final).toBeNull();
          expect(p.failure).toBeNull();
          expect(p.checkpoint).toMatchObject({
            final: null,
            calls: [],
            pendingFinal: '',
            outputRepair: { iteration: 3 },
          });
          expect(p.checkpoint.message.content).toBe('{"n":"three"}'); // the answer stays in the transcript
          expect(p.checkpoint.outputRepair!.message).toContain('/n must be integer');
          expect(p.checkpoint.outputRepair!.message).toContain('"answer"');
          expect(types(p)).toEqual(['output.invalid']);
          expect(p.checkpoint.events[0]!.data).toEqual({ iteration: 2, errors: ['/n must be integer'], repair: true });
          expect(p.totals.llmCalls).toBe(1); // billed like any model call
        },
      },
      {
        name: 'a finalize answer that is invalid keeps its reason for the repair call',
        go: () => run(st(), response(null, 'no json'), invalid, 'loop_detected'),
        expect: (p) =>
          expect(p.checkpoint).toMatchObject({ pendingFinal: 'loop_detected', outputRepair: { iteration: 3 } }),
      },
      {
        name: 'still invalid after the repair turn: the run fails output_invalid with the errors, the answer recorded',
        go: () => run(st({ outputRepair: { iteration: 2, message: 'm' } }), response(null, '{"n":"3"}'), invalid),
        expect: (p) => {
          expect(p.final).toBeNull();
          expect(p.failure).toEqual({ code: 'output_invalid', message: expect.stringContaining('/n must be integer') });
          expect(p.checkpoint.failure).toEqual(p.failure);
          expect(p.checkpoint.outputRepair).toBeUndefined();
          expect(types(p)).toEqual(['output.invalid', 'iteration.completed', 'run.failed']);
          expect(p.checkpoint.events[0]!.data).toMatchObject({ repair: false });
        },
      },
      {
        name: 'valid after the repair turn: completes with the repaired answer',
        go: () =>
          run(
            st({ outputRepair: { iteration: 2, message: 'm' } }),
            response(null, '{"n":3}'),
            { ok: true, value: { n: 3 } },
            'max_iterations',
          ),
        expect: (p) =>
          expect(p.final).toEqual({ stopReason: 'max_iterations', output: '{"n":3}', outputJson: { n: 3 } }),
      },
      {
        name: 'tool calls of a structured-output run are planned as usual (no check needed)',
        go: () => run(st(), response([call('read_it')]), undefined),
        expect: (p) => expect(p.toRun.map((c) => c.callId)).toEqual(['c_read_it']),
      },
    ];
  for (const c of cases) it(c.name, () => c.expect(c.go()));

  it('refuses to plan a final answer of a structured-output run without its check', () => {
    expect(() => run(st(), response(null, '{}'), undefined)).toThrow(/outputCheck/);
  });
});
