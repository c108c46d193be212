import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARIZE_SYSTEM } from '@agentloop/llm';
import { isReactRequest, reactObservations, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const TRICKY = 'a {"b": "}"} c \\ {';

const field = (observation: string, key: string): unknown => {
  try {
    return (JSON.parse(observation) as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
};

/** A model without native tool calls, answering in the ReAct format from what the transcript shows it. */
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  // three iterations: a lookup whose argument holds braces, quotes and a backslash; a fenced calculator input; an answer
  multi: (req) => {
    const obs = reactObservations(req);
    if (obs.length === 0)
      return {
        text: `Thought: I should look up the key first.\nAction: lookup\nAction Input: ${JSON.stringify({ key: TRICKY })}\nObservation: {"value": "invented by the model"}\nFinal Answer: wrong`,
        chunking: 'fine',
        ignoreStop: true, // a server that ignores stop sequences: the parser must cut the invented observation
      };
    if (obs.length === 1)
      return {
        text: '<think>the calculator takes an expression</think>\n**Thought:** now the arithmetic\n**Action:** calculator\n**Action Input:**\n```json\n{"expression": "17*23"}\n```',
        chunking: 'fine',
      };
    return {
      text: `Thought: I have both.\nFinal Answer: The key reads ${String(field(obs[0]!, 'value'))} and 17*23 = ${String(field(obs[1]!, 'value'))}.`,
      chunking: 'fine',
    };
  },
  // an action whose input is not JSON, then an unknown tool, then a reply in no format at all
  malformed: (req) => {
    const obs = reactObservations(req);
    if (obs.length === 0) return { text: 'Thought: try it\nAction: lookup\nAction Input: {"key": oops}' };
    if (obs.length === 1) return { text: 'Action: teleport\nAction Input: {"to": "moon"}' };
    return {
      text: `I could not use the tools properly ({"half": ) — sorry. Errors seen: ${obs.map((o) => String((field(o, 'error') as { code?: string } | undefined)?.code ?? '?')).join(', ')}`,
    };
  },
  approval: (req) => {
    const obs = reactObservations(req);
    if (obs.length === 0)
      return {
        text: 'Thought: I must send it.\nAction: send_email\nAction Input: {"to": "ops@example.com", "body": "hi {there}"}',
      };
    return { text: `Final Answer: sent=${String(field(obs[0]!, 'sent'))}` };
  },
  final: () => ({ text: 'Thought: enough.\nAction: lookup\nAction Input: {"key": "x"}' }),
  // six big results in a small window: the compressor summarizes older turns between ReAct steps
  long: (req) => {
    const key = req.messages.find((m) => m.role === 'user' && m.content?.includes('[long]'))!.content!.split('\n')[0]!;
    const n = issued.get(key) ?? 0;
    if (n < 6) {
      issued.set(key, n + 1);
      return { text: `Thought: fetch result ${n}\nAction: big\nAction Input: {"n": ${3000 + n}}` };
    }
    return { text: `Final Answer: done after ${n} results` };
  },
};
/** Actions issued per run (a compressed transcript no longer shows them all). */
const issued = new Map<string, number>();

describe('ReAct strategy: the same orchestration for a model without native tool calls', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      contextWindows: { 'gpt-4o-mini': 4000 },
      script: (req) => {
        if (req.messages[0]?.content === SUMMARIZE_SYSTEM)
          return { text: '- SUMMARY: six big results were fetched for the user' };
        if (!isReactRequest(req)) return { error: { status: 400, message: 'the ReAct mock expects a ReAct prompt' } };
        return byScenario(scenarios, 'multi')(req);
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const start = (input: string, extra: Record<string, unknown> = {}) =>
    s.a.startRun({
      input,
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      strategy: 'react',
      tools: ['lookup', 'calculator', 'send_email'],
      ...extra,
    });

  it('runs three iterations with a tool argument full of braces and quotes; the transcript stays canonical', async () => {
    const before = s.mock.journal.length;
    // on Chat Completions (the stop sequence is a Chat field; the Responses API has none)
    const id = await start('[multi] what does the key read, and what is 17*23?', {
      model: { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' },
    });
    const { snap, messages, events } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 3, stopReason: 'final_answer' });
    expect(snap.output).toBe(`The key reads ${TRICKY.toUpperCase()} and 17*23 = 391.`);
    // actions are canonical tool calls, observations canonical tool messages
    const calls = messages.filter((m) => m.toolCalls?.length).map((m) => m.toolCalls![0]!);
    expect(calls.map((c) => [c.name, JSON.parse(c.arguments)])).toEqual([
      ['lookup', { key: TRICKY }],
      ['calculator', { expression: '17*23' }],
    ]);
    expect(messages.filter((m) => m.role === 'tool')).toHaveLength(2);
    expect(messages.find((m) => m.toolCalls?.length)!.reasoning).toBe('I should look up the key first.');
    // the final iteration's message deltas are exactly the output; thoughts streamed as reasoning
    const final = events
      .filter((e) => e.type === 'message.delta' && e.data.iteration === 3)
      .map((e) => e.data.text)
      .join('');
    expect(final).toBe(snap.output);
    expect(events.filter((e) => e.type === 'message.delta' && e.data.iteration !== 3)).toEqual([]);
    expect(
      events
        .filter((e) => e.type === 'reasoning.delta')
        .map((e) => e.data.text)
        .join(''),
    ).toContain('the calculator takes an expression');
    // every request: no native tools, a stop sequence before "Observation:", the tools described in the system prompt
    const reqs = s.mock.journal.slice(before).map((j) => j.req);
    expect(reqs).toHaveLength(3);
    for (const r of reqs) {
      expect(r.body.tools).toBeUndefined();
      expect(r.body.stop).toContain('\nObservation:');
      expect(r.messages[0]!.content).toMatch(/- lookup: Returns the key in upper case\./);
    }
    // the second request shows the first action and its observation in the ReAct format
    expect(reqs[1]!.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'user']);
    expect(reqs[1]!.messages[2]!.content).toBe(
      `Thought: I should look up the key first.\nAction: lookup\nAction Input: ${JSON.stringify({ key: TRICKY })}`,
    );
  });

  it('answers a malformed action and an unknown tool with structured errors, and reads a formatless reply as the answer', async () => {
    const id = await start('[malformed] try');
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 3, stopReason: 'final_answer' });
    expect(snap.output).toBe(
      'I could not use the tools properly ({"half": ) — sorry. Errors seen: invalid_arguments, unknown_tool',
    );
    const ends = events
      .filter((e) => e.type === 'tool.call' && e.data.status === 'error')
      .map((e) => [e.data.name, (e.data.error as { code: string }).code]);
    expect(ends).toEqual([
      ['lookup', 'invalid_arguments'],
      ['teleport', 'unknown_tool'],
    ]);
  });

  it('pauses a ReAct action for approval like a native call, and resumes it', async () => {
    const id = await start('[approval] send it');
    const paused = await s.a.waitFor(id, (x) => x.status === 'paused');
    expect(paused.pending).toEqual([
      {
        callId: expect.stringMatching(/^call_/),
        name: 'send_email',
        arguments: { to: 'ops@example.com', body: 'hi {there}' },
        pauseType: 'awaiting_approval',
      },
    ]);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect(r.status).toBe(202);
    const { snap } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', output: 'sent=true' });
  });

  it('a final call without tools reads an action it still writes as plain text', async () => {
    const id = await start('[final] go', { limits: { maxIterations: 1 } });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.error).toBeNull();
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'max_iterations', iteration: 2 });
    expect(snap.output).toBe('Thought: enough.\nAction: lookup\nAction Input: {"key": "x"}');
    const last = events
      .filter((e) => e.type === 'message.delta' && e.data.iteration === 2)
      .map((e) => e.data.text)
      .join('');
    expect(last).toBe(snap.output);
    const lastReq = s.mock.journal.at(-1)!.req;
    expect(lastReq.messages[0]!.content).toContain('No tools are available now');
  });

  it('compresses a long ReAct run like a native one: the summary reaches the model in the ReAct rendering', async () => {
    const before = s.mock.journal.length;
    const id = await start(`[long] fetch big results (${Math.random()})`, {
      tools: ['big'],
      model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: 4000 },
      limits: { maxIterations: 20 },
    });
    const { snap, events } = await finishedRun(s.a, id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer', output: 'done after 6 results' });
    expect(events.filter((e) => e.type === 'context.compressed').map((e) => e.data.strategy)).toContain('summarize');
    const react = s.mock.journal
      .slice(before)
      .map((j) => j.req)
      .filter((r) => isReactRequest(r));
    expect(
      react.some((r) => r.messages.some((m) => m.role === 'user' && m.content?.includes('SUMMARY: six big results'))),
    ).toBe(true);
    for (const r of react) expect(r.body.tools).toBeUndefined();
  });

  it('runs on an OpenAI reasoning model, which takes no stop sequences: the parser stops at the invented Observation', async () => {
    const before = s.mock.journal.length;
    const id = await start('[multi] reasoning model', { model: { provider: 'openai', name: 'gpt-5-mini' } });
    const { snap } = await finishedRun(s.a, id);
    expect(snap.output).toBe(`The key reads ${TRICKY.toUpperCase()} and 17*23 = 391.`);
    const reqs = s.mock.journal.slice(before);
    expect(reqs.map((j) => j.status)).toEqual([200, 200, 200]);
    for (const j of reqs) expect([j.req.wire, j.req.body.stop]).toEqual(['responses', undefined]);
  });

  it('runs on the Responses API (no stop field there): the parser cuts the Observation a model invents', async () => {
    const before = s.mock.journal.length;
    const id = await start('[multi] on responses');
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.output).toBe(`The key reads ${TRICKY.toUpperCase()} and 17*23 = 391.`);
    expect(messages.filter((m) => m.role === 'tool').map((m) => m.content)).not.toContain(
      '{"value": "invented by the model"}',
    );
    const reqs = s.mock.journal.slice(before);
    for (const j of reqs)
      expect([j.status, j.req.wire, j.req.body.stop, j.req.body.tools]).toEqual([
        200,
        'responses',
        undefined,
        undefined,
      ]);
  });

  it('runs on Gemini the same way (the strict Gemini mock accepts the ReAct turns)', async () => {
    const before = s.mock.journal.length;
    const id = await start('[multi] gemini please', { model: { provider: 'google', name: 'gemini-3-flash' } });
    const { snap } = await finishedRun(s.a, id);
    expect(snap.output).toBe(`The key reads ${TRICKY.toUpperCase()} and 17*23 = 391.`);
    const reqs = s.mock.journal.slice(before);
    expect(reqs.map((j) => `${j.req.provider}:${j.status}`)).toEqual(['google:200', 'google:200', 'google:200']);
    expect((reqs[0]!.req.body.generationConfig as { stopSequences: string[] }).stopSequences).toContain(
      '\nObservation:',
    );
  });
});
