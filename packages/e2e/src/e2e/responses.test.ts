import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '@agentloop/protocol';
import {
  checkEvents,
  checkTranscript,
  demoAgentScript,
  stepOf,
  stepResults,
  type MockRequest,
  type ReplySpec,
  type Script,
} from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { finishedRun, until } from '../test-support/helpers.js';

type Item = Record<string, any>;
const REASONER = { provider: 'openai', name: 'gpt-5-mini' } as const;
const inputOf = (req: MockRequest) => (req.body.input ?? []) as Item[];
const reasoningOf = (m: Message) => (m.providerData?.openaiReasoning ?? []) as Item[];
const scenario = (req: MockRequest) =>
  /\[(\w+)\]/.exec(req.messages.find((m) => m.role === 'user')?.content ?? '')?.[1] ?? '';
/** A four-step tool loop (three calculator steps, then an answer from the results the transcript shows). */
const fourSteps = (req: MockRequest): ReplySpec => {
  const step = stepOf(req);
  if (step < 3)
    return {
      reasoning: `step ${step} on ${req.wire}`,
      toolCalls: [{ name: 'calculator', args: { expression: `${step}+${step}` } }],
    };
  return { text: `results: ${[0, 1, 2].map((k) => stepResults(req, k).join(',')).join(' | ')}` };
};

describe('OpenAI Responses API end to end (the default for provider openai), against the strict mocks', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    const demo = demoAgentScript();
    s = await InProcessStack.start({
      script: (req) => {
        const name = scenario(req);
        if (name === 'edit')
          return stepOf(req) === 0
            ? { toolCalls: [{ name: 'send_email', args: { to: 'model@example.com', body: 'hi' } }] }
            : { text: 'sent' };
        if (name === 'cached')
          return { text: 'from cache', usage: { prompt: 4000, cached: 3072, completion: 10, reasoning: 6 } };
        if (name === 'r2c' || name === 'g2r') {
          const step = stepOf(req);
          // r2c: Responses → Chat → Gemini → Responses; g2r: Gemini → Responses → Gemini → Responses
          const down =
            name === 'r2c'
              ? (req.wire === 'responses' && (step === 1 || step === 2)) || (req.wire === 'chat' && step === 2)
              : req.wire === 'gemini' && (step === 1 || step === 3);
          return down
            ? { error: { status: 503, message: 'The server is overloaded or not ready yet.' } }
            : fourSteps(req);
        }
        if (name === 'r2d' || name === 'd2r') {
          // r2d: Responses → DeepSeek → Responses → DeepSeek; d2r: DeepSeek → Responses → DeepSeek → Responses
          const odd = stepOf(req) % 2 === 1;
          const down = (req.provider === 'deepseek') === (name === 'r2d' ? !odd : odd);
          return down ? { error: { status: 503, message: 'Service Unavailable' } } : fourSteps(req);
        }
        return { ...demo(req), reasoning: `thinking about step ${stepOf(req)}\n\nand checking it`, chunking: 'fine' };
      },
    });
  });
  afterAll(async () => {
    expect(s?.mock.violations ?? []).toEqual([]); // never a previous_response_id
    await s?.stop();
  });

  it('a reasoning model: three iterations with parallel calls; its reasoning items come back byte for byte and in order', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({
      input: 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
      model: REASONER,
      tools: ['calculator', 'current_time'],
    });
    const { snap, messages, events } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 3 });
    expect(snap.output).toMatch(/^17 × 23 = 391, and \(2 \+ 3\) × 4 = 20\./);
    const journal = s.mock.journal.slice(before);
    expect(journal.map((j) => [j.req.wire, j.status])).toEqual([
      ['responses', 200],
      ['responses', 200],
      ['responses', 200],
    ]);
    for (const j of journal)
      expect(j.req.body).toMatchObject({
        store: false,
        stream: true,
        include: ['reasoning.encrypted_content'],
        prompt_cache_key: id,
      });
    const [first, second] = messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length);
    expect(first!.toolCalls).toHaveLength(2);
    expect(reasoningOf(first!).map((r) => r.encrypted_content)).toEqual(
      reasoningOf(first!).map((r) => s.mock.ledger.encryptedOf(r.id)),
    );
    const sentBack = journal.map((j) =>
      inputOf(j.req)
        .filter((x) => x.type === 'reasoning')
        .map((x) => JSON.stringify(x)),
    );
    expect(sentBack).toEqual([
      [],
      reasoningOf(first!).map((r) => JSON.stringify(r)),
      [...reasoningOf(first!), ...reasoningOf(second!)].map((r) => JSON.stringify(r)),
    ]);
    // in the third request each reasoning item stands right before the calls it led to, which carry their item ids
    const third = inputOf(journal[2]!.req);
    const kinds = third.map((x) => x.type ?? x.role);
    const at = kinds.indexOf('reasoning');
    expect(kinds.slice(at, at + 4)).toEqual(['reasoning', 'message', 'function_call', 'function_call']);
    expect(third.filter((x) => x.type === 'function_call').map((x) => x.id)).toEqual(
      [...first!.toolCalls!, ...second!.toolCalls!].map((c) => c.providerData?.itemId),
    );
    // the summary streamed as reasoning.delta, per iteration
    for (const k of [1, 2, 3])
      expect(
        events
          .filter((e) => e.type === 'reasoning.delta' && e.data.iteration === k)
          .map((e) => e.data.text)
          .join(''),
      ).toBe(`thinking about step ${k - 1}\n\nand checking it`);
    expect(first!.reasoning).toBe('thinking about step 0\n\nand checking it');
  });

  it('an approval with edited arguments keeps the turn’s reasoning items byte for byte (an empty summary stays [])', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({ input: '[edit] mail it', model: REASONER, tools: ['send_email'] });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const edited = { to: 'ops@example.com', body: 'edited' };
    expect(
      (
        await s.a.request('POST', `/v1/runs/${id}/decisions`, {
          decisions: [{ callId: paused.pending[0]!.callId, action: 'approve', arguments: edited }],
        })
      ).status,
    ).toBe(202);
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', output: 'sent' });
    const turn = messages.find((m) => m.role === 'assistant' && m.toolCalls?.length)!;
    expect(JSON.parse(turn.toolCalls![0]!.arguments)).toEqual(edited);
    expect(reasoningOf(turn)).toHaveLength(1);
    expect(reasoningOf(turn)[0]!.summary).toEqual([]); // a reasoning model that streamed no summary
    const second = inputOf(s.mock.journal.slice(before).filter((j) => j.status === 200)[1]!.req);
    expect(second.filter((x) => x.type === 'reasoning').map((x) => JSON.stringify(x))).toEqual(
      reasoningOf(turn).map((r) => JSON.stringify(r)),
    );
    expect(second.find((x) => x.type === 'function_call')).toMatchObject({
      id: turn.toolCalls![0]!.providerData?.itemId,
      arguments: JSON.stringify(edited),
    });
  });

  it('falls back Responses → Chat → Gemini and back: every provider accepts the transcript, reasoning items go to Responses only', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({
      input: '[r2c] add',
      model: REASONER,
      fallbacks: [
        { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' },
        { provider: 'google', name: 'gemini-3-flash' },
      ],
      tools: ['calculator'],
    });
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(snap.output).toBe('results: {"value":0} | {"value":2} | {"value":4}');
    const journal = s.mock.journal.slice(before);
    expect(journal.filter((j) => !j.injected).map((j) => `${j.req.wire}:${j.status}`)).toEqual([
      'responses:200',
      'chat:200',
      'gemini:200',
      'responses:200',
    ]);
    expect(messages.filter((m) => m.role === 'assistant').map((m) => m.providerData?.provider)).toEqual([
      'openai',
      'openai',
      'google',
      'openai',
    ]);
    const secret = reasoningOf(messages.find((m) => m.role === 'assistant')!)[0]!.encrypted_content as string;
    for (const j of journal.filter((j) => !j.injected))
      expect(JSON.stringify(j.req.body).includes(secret)).toBe(j.req.wire === 'responses' && stepOf(j.req) > 0);
    // the last Responses request: its own turn with reasoning and ids, the Chat and Gemini turns plain
    const last = inputOf(journal.at(-1)!.req).filter((x) => x.type === 'function_call');
    expect(last.map((x) => Boolean(x.id))).toEqual([true, false, false]);
  });

  it('falls back Gemini → Responses → Gemini → Responses: Gemini never sees a reasoning item, Responses gets its own back', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({
      input: '[g2r] add',
      model: { provider: 'google', name: 'gemini-3-flash' },
      fallbacks: [REASONER],
      tools: ['calculator'],
    });
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    const journal = s.mock.journal.slice(before).filter((j) => !j.injected);
    expect(journal.map((j) => `${j.req.wire}:${j.status}`)).toEqual([
      'gemini:200',
      'responses:200',
      'gemini:200',
      'responses:200',
    ]);
    const responsesTurn = messages.filter((m) => m.role === 'assistant')[1]!;
    const secret = reasoningOf(responsesTurn)[0]!.encrypted_content as string;
    expect(JSON.stringify(journal[2]!.req.body)).not.toContain(secret);
    expect(
      inputOf(journal[3]!.req)
        .filter((x) => x.type === 'reasoning')
        .map((x) => x.encrypted_content),
    ).toEqual([secret]);
    expect(checkTranscript(messages)).toEqual([]);
  });

  it.each(['r2d', 'd2r'])(
    'falls back between Responses and DeepSeek thinking mode (%s): each keeps its own rules, no encrypted item reaches DeepSeek',
    async (name) => {
      const before = s.mock.journal.length;
      const deepseek = { provider: 'deepseek', name: 'deepseek-v4-flash' };
      const [model, fallback] = name === 'r2d' ? [REASONER, deepseek] : [deepseek, REASONER];
      const id = await s.a.startRun({ input: `[${name}] add`, model, fallbacks: [fallback], tools: ['calculator'] });
      const { snap, messages } = await finishedRun(s.a, id);
      expect(snap.status).toBe('completed');
      expect(snap.output).toBe('results: {"value":0} | {"value":2} | {"value":4}');
      const journal = s.mock.journal.slice(before).filter((j) => !j.injected);
      const order =
        name === 'r2d' ? ['openai', 'deepseek', 'openai', 'deepseek'] : ['deepseek', 'openai', 'deepseek', 'openai'];
      expect(journal.map((j) => `${j.req.provider}:${j.status}`)).toEqual(order.map((p) => `${p}:200`)); // the strict mocks refused nothing
      const secrets = messages.flatMap((m) => reasoningOf(m).map((r) => r.encrypted_content as string));
      expect(secrets.length).toBeGreaterThan(0);
      for (const j of journal.filter((j) => j.req.provider === 'deepseek'))
        for (const secret of secrets) expect(JSON.stringify(j.req.body)).not.toContain(secret);
      // DeepSeek thinking mode: reasoning_content on every assistant step with calls, its own and the foreign ones
      const lastDeepseek = journal.filter((j) => j.req.provider === 'deepseek').at(-1)!;
      const assistants = (lastDeepseek.req.body.messages as Array<Record<string, unknown>>).filter(
        (m) => m.role === 'assistant' && m.tool_calls,
      );
      expect(assistants.length).toBeGreaterThan(1);
      for (const m of assistants) expect(typeof m.reasoning_content).toBe('string');
      expect(checkTranscript(messages)).toEqual([]);
    },
  );

  it('usage.cachedTokens reaches the cost and the metrics (kind="cached"); prompt_cache_key is the run id', async () => {
    const metric = async () =>
      Number(
        /agentloop_llm_tokens_total\{provider="openai",model="gpt-5-mini",kind="cached"\} (\d+)/.exec(
          (await s.anon.request('GET', '/metrics')).text,
        )?.[1] ?? 0,
      );
    const m0 = await metric();
    const id = await s.a.startRun({ input: '[cached] hi', model: REASONER });
    const { snap } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({
      status: 'completed',
      output: 'from cache',
      usage: { promptTokens: 4000, completionTokens: 16, reasoningTokens: 6, cachedTokens: 3072 },
    });
    expect(snap.usage.costUsd).toBeCloseTo((928 * 0.25 + 3072 * 0.025 + 16 * 2) / 1e6, 9); // cached input at gpt-5-mini's cached rate
    expect((await metric()) - m0).toBe(3072);
    expect(s.mock.journal.at(-1)!.req.body.prompt_cache_key).toBe(id);
  });
});

describe('kill -9 of the orchestrator mid-stream on the Responses API', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('another orchestrator finishes the run; the cut-off call is not billed, the recorded one not twice', async () => {
    const words = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ');
    const script: Script = (req) =>
      stepOf(req) === 0
        ? {
            reasoning: 'look it up',
            toolCalls: [{ name: 'lookup', args: { key: 'k' } }],
            usage: { prompt: 100, completion: 10, reasoning: 5 },
          }
        : {
            reasoning: 'now answer',
            text: `Answer: ${words}`,
            chunking: 'fine',
            delayMs: 40,
            usage: { prompt: 200, completion: 20, reasoning: 7 },
          };
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], { script });
    const id = await s.a.startRun({ input: 'stream', model: REASONER, tools: ['lookup'] });
    await until('deltas of the final iteration', async () =>
      (await s!.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
    );
    await s.kill('orchestrator', 'SIGKILL');
    await s.spawn('orchestrator#2');
    const snap = await s.a.waitTerminal(id, 40_000);
    expect(snap).toMatchObject({ status: 'completed', output: `Answer: ${words}` });
    // billed: iteration 1 once, and the final iteration's completed retry — not the call the crash cut off
    expect(snap.usage).toMatchObject({ llmCalls: 2, promptTokens: 300, completionTokens: 42, reasoningTokens: 12 });
    const events = (await s.a.events(id)).events;
    expect(checkEvents(events)).toEqual([]);
    expect(events.find((e) => e.type === 'llm.retry')?.data).toMatchObject({
      discardOutput: true,
      reason: 'worker_restarted',
    });
    // the cut-off call and its retry (under CPU starvation BullMQ may lose the retry's lock and run it a second time
    // in parallel — a separate, pre-existing race; the checkpoint still takes one response, billed once)
    expect(s.mock.requests.length).toBeGreaterThanOrEqual(3);
    expect(new Set(s.mock.requests.map((r) => r.wire))).toEqual(new Set(['responses']));
    // the retried call carried the first iteration's reasoning item back, as issued
    const retried = s.mock.requests.at(-1)!.body.input as Item[];
    const rs = retried.find((x) => x.type === 'reasoning')!;
    expect(rs.encrypted_content).toBe(s.mock.ledger.encryptedOf(rs.id));
    expect(s.mock.violations).toEqual([]);
  }, 120_000);
});
