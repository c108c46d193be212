import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SAFE_CALL_ID_RE, type Message } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { finishedRun } from '../test-support/helpers.js';

// (Gemini carries arguments as a protobuf Struct, whose depth its API bounds: there, deep means past our 64 levels)
const deepArgs = (req: MockRequest) => {
  const n = req.provider === 'google' ? 100 : 10_000;
  return '{"a":'.repeat(n) + '1' + '}'.repeat(n);
};
const turns = (req: MockRequest) => req.messages.filter((m) => m.role === 'assistant').length;

/** Turn 1: an id with ':' and deep arguments, a repeated id; turn 2 reuses both ids; turn 3 answers. */
const script = (req: MockRequest): ReplySpec => {
  // broken Unicode: half an emoji cut by a cap, lone surrogates in arguments, results and names
  if (req.messages.some((m) => m.content === 'unicode'))
    return turns(req) === 0
      ? {
          chunking: 'restated',
          toolCalls: [
            { id: 'u1', name: 'current_time', arguments: 'x' + '🙂'.repeat(150) },
            { id: 'u2', name: 'calculator', args: { expression: '🙂' } },
            { id: 'u3', name: 'calculator', args: { expression: '\ud800' } },
            { id: 'u4', name: '\ud800', args: {} },
            { id: 'u5', name: 'current_time', args: { timezone: '🙂'.repeat(3000) } },
          ],
        }
      : { text: 'done \ud800 🙂' };
  // a batch of 100 calls at once: past the bound of a batch without a flow parent (RunScheduler)
  if (req.messages.some((m) => m.content === 'hundred'))
    return turns(req) === 0
      ? {
          toolCalls: Array.from({ length: 100 }, (_, i) => ({
            id: `h${i}`,
            name: 'calculator',
            args: { expression: `${i}+1` },
          })),
        }
      : { text: `answered ${req.messages.filter((m) => m.role === 'tool').length}` };
  // a run whose input transcript holds a call `prev_1`: the model reuses that id once
  if (req.messages.some((m) => m.content === 'earlier'))
    return turns(req) === 1
      ? { toolCalls: [{ id: 'prev_1', name: 'calculator', args: { expression: '5+5' } }] }
      : { text: 'done' };
  switch (turns(req)) {
    case 0:
      return {
        toolCalls: [
          { id: 'call:1', name: 'calculator', arguments: deepArgs(req) },
          { id: 'dup', name: 'calculator', args: { expression: '1+1' } },
          { id: 'dup', name: 'calculator', args: { expression: '2+2' } },
          { id: 'x'.repeat(300), name: 'no_such_tool', arguments: req.provider === 'google' ? '{}' : '{"broken' },
        ],
      };
    case 1:
      return {
        toolCalls: [
          { id: 'call:1', name: 'calculator', args: { expression: '3+3' } },
          { id: 'dup', name: 'calculator', args: { expression: '4+4' } },
        ],
      };
    default:
      return { text: 'done' };
  }
};

describe('hostile model output (SPEC §3)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
  }, 30_000);
  afterAll(() => s?.stop());

  for (const model of [
    { provider: 'openai', name: 'gpt-4o-mini' },
    { provider: 'google', name: 'gemini-2.5-flash' },
  ]) {
    it(`${model.provider}: deep arguments, unsafe and reused ids and unknown names never fail the run`, async () => {
      const id = await s.a.startRun({ input: 'go', model, tools: ['calculator'], limits: { repeatLimit: 100 } });
      const { snap, events } = await finishedRun(s.a, id);
      expect(snap, JSON.stringify(snap.error)).toMatchObject({ status: 'completed', output: 'done' });
      const history = ((await s.a.getRun(id, 'history')).json as unknown as { history: Message[] }).history;
      const calls = history.flatMap((m) => m.toolCalls ?? []);
      expect(calls).toHaveLength(6);
      const ids = calls.map((c) => c.id);
      expect(new Set(ids).size).toBe(6);
      for (const callId of ids) expect(callId).toMatch(SAFE_CALL_ID_RE);
      const providerIds = calls.map(
        (c) => (c.providerData as { providerCallId?: string } | undefined)?.providerCallId ?? c.id,
      );
      expect(providerIds).toEqual(['call:1', 'dup', 'dup', 'x'.repeat(300), 'call:1', 'dup']);
      const results = history.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content!));
      expect(results.map((r) => (r.ok === false ? r.error.code : 'ok'))).toEqual([
        'invalid_arguments',
        'ok',
        'ok',
        'unknown_tool',
        'ok',
        'ok',
      ]);
      const proposed = events.filter((e) => e.type === 'tool.call' && e.data.status === 'proposed');
      expect(proposed.map((e) => e.data.callId)).toEqual(ids);
      expect(typeof proposed[0]!.data.arguments).toBe('string'); // too deep to show parsed: its raw text, cut
      // every call's record is readable by its stored id
      for (const callId of ids) expect((await s.a.request('GET', `/v1/runs/${id}/calls/${callId}`)).status).toBe(200);
      if (model.provider === 'google') {
        // Gemini gets its own ids back (the mock pairs them strictly by id)
        const last = s.mock.requests.filter((r) => r.provider === 'google').at(-1)!;
        const sent = last.messages.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
        expect(sent).toEqual(['call:1', 'dup', 'dup', 'x'.repeat(300), 'call:1', 'dup']);
      }
    });
  }

  it('broken Unicode anywhere (arguments, tool errors, names, the answer) never stalls or fails the run', async () => {
    const id = await s.a.startRun({
      input: 'unicode',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['calculator', 'current_time'],
    });
    const { snap } = await finishedRun(s.a, id, 20_000);
    expect(snap, JSON.stringify(snap.error)).toMatchObject({ status: 'completed' });
    const history = ((await s.a.getRun(id, 'history')).json as unknown as { history: Message[] }).history;
    expect(history.filter((m) => m.role === 'tool')).toHaveLength(5);
  });

  it('a batch of 100 calls in one response runs each call once and the run goes on (a flow past the bound)', async () => {
    const id = await s.a.startRun({
      input: 'hundred',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['calculator'],
      limits: { repeatLimit: 100, maxToolCalls: 1000 },
    });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap, JSON.stringify(snap.error)).toMatchObject({ status: 'completed', output: 'answered 100' });
    const completed = events
      .filter((e) => e.type === 'tool.call' && e.data.status === 'completed')
      .map((e) => e.data.callId);
    expect(new Set(completed).size).toBe(100);
    expect(completed).toHaveLength(100);
  });

  it('an id the input transcript already used is renamed when a model reuses it', async () => {
    const input = [
      { role: 'user', content: 'earlier' },
      {
        role: 'assistant',
        content: null,
        toolCalls: [{ id: 'prev_1', name: 'calculator', arguments: '{"expression":"1"}' }],
      },
      { role: 'tool', toolCallId: 'prev_1', content: '{"value":1}' },
      { role: 'user', content: 'go' },
    ];
    const id = await s.a.startRun({
      input,
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['calculator'],
      limits: { repeatLimit: 100 },
    });
    const { snap } = await finishedRun(s.a, id);
    expect(snap, JSON.stringify(snap.error)).toMatchObject({ status: 'completed' });
    const history = ((await s.a.getRun(id, 'history')).json as unknown as { history: Message[] }).history;
    const ids = history.flatMap((m) => m.toolCalls ?? []).map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids.filter((x) => x === 'prev_1')).toHaveLength(1);
  });
});
