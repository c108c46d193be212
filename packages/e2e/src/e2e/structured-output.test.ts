import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope, Message } from '@agentloop/protocol';
import { reactObservations, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun, until } from '../test-support/helpers.js';

/** The answer's shape: every property required (OpenAI strict mode), additionalProperties left to the product. */
const RESULT = {
  type: 'object',
  properties: { label: { type: 'string' }, value: { type: 'integer' } },
  required: ['label', 'value'],
};
const CHAT = { provider: 'openai', name: 'gpt-4o-mini', api: 'chat' };

const lastUser = (req: MockRequest) => [...req.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
/** The request is the repair turn: its last user message carries the validation errors. */
const repairing = (req: MockRequest) => /Your final answer is not valid/.test(lastUser(req));
/** The calculator's result, as the model saw it (the tool message of the transcript). */
const toolValue = (req: MockRequest): number =>
  Number((JSON.parse(req.messages.find((m) => m.role === 'tool')!.content!) as { value: number }).value);
const answer = (label: string, value: unknown) => JSON.stringify({ label, value });

const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  valid: () => ({ text: answer('seventeen', 17), chunking: 'fine' }),
  // a fenced answer, the value a string: invalid; then the corrected one
  repair: (req) =>
    repairing(req) ? { text: answer('fixed', 42) } : { text: '```json\n{"label":"first","value":"42"}\n```' },
  invalid: () => ({ text: '{"label":"never a value"}' }),
  // a tool first, then the answer built from its result
  tools: (req) =>
    req.messages.some((m) => m.role === 'tool')
      ? { text: answer('product', toolValue(req)) }
      : { toolCalls: [{ name: 'calculator', args: { expression: '17*23' } }] },
  // ReAct: an action, then a final answer in prose (not JSON), then — repaired — the JSON
  react: (req) => {
    const obs = reactObservations(req);
    if (repairing(req))
      return {
        text: `Thought: JSON it is.\nFinal Answer: ${answer('react', Number((JSON.parse(obs[0]!) as { value: number }).value))}`,
      };
    if (!obs.length)
      return { text: 'Thought: compute first.\nAction: calculator\nAction Input: {"expression": "6*7"}' };
    return { text: 'Thought: done.\nFinal Answer: the product is 42' };
  },
};

const ofType = (events: EventEnvelope[], type: string) => events.filter((e) => e.type === type);
const systemText = (req: MockRequest) =>
  req.messages
    .filter((m) => m.role === 'system')
    .map((m) => m.content ?? '')
    .join('\n');

describe('structured output (output.schema) through the real SDKs against strict mocks', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: byScenario(scenarios, 'valid') });
  });
  afterAll(async () => {
    await s?.stop();
  });
  /** Starts a run whose input names its scenario and a nonce that every one of its model requests carries. */
  const start = async (tag: string, body: Record<string, unknown>) => {
    const nonce = `${tag}-${Math.random().toString(36).slice(2)}`;
    const id = await s.a.startRun({ input: `[${tag}] ${nonce}`, output: { schema: RESULT, name: 'result' }, ...body });
    return { id, nonce };
  };
  /** The model requests of one run, in order. */
  const calls = (run: { nonce: string }) =>
    s.mock.journal
      .map((j) => j.req)
      .filter((r) => r.messages.some((m: Message) => m.role === 'user' && m.content?.includes(run.nonce)));

  it('Chat: a valid answer completes with outputJson in the snapshot and in run.completed; the request carried the strict json_schema', async () => {
    const run = await start('valid', { model: CHAT });
    const { snap, events } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'final_answer',
      iteration: 1,
      output: answer('seventeen', 17),
      outputJson: { label: 'seventeen', value: 17 },
    });
    expect(ofType(events, 'run.completed')[0]!.data).toMatchObject({
      output: answer('seventeen', 17),
      outputJson: { label: 'seventeen', value: 17 },
    });
    expect(
      ofType(events, 'message.delta')
        .map((e) => e.data.text)
        .join(''),
    ).toBe(snap.output); // the deltas are the output
    const [req] = calls(run);
    expect(req!.output).toEqual({
      type: 'json_schema',
      name: 'result',
      strict: true,
      schema: { ...RESULT, additionalProperties: false },
    });
  });

  it('Chat: an invalid answer gets one repair turn (the errors reach the model as a user message), then completes', async () => {
    const run = await start('repair', { model: CHAT });
    const { snap, events, messages } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'final_answer',
      iteration: 2,
      outputJson: { label: 'fixed', value: 42 },
    });
    expect(snap.usage.llmCalls).toBe(2);
    expect(ofType(events, 'output.invalid').map((e) => e.data)).toEqual([
      { iteration: 1, errors: ['/value must be integer'], repair: true },
    ]);
    const reqs = calls(run);
    expect(reqs).toHaveLength(2);
    const repair = reqs[1]!;
    expect(repair.messages.at(-2)).toMatchObject({
      role: 'assistant',
      content: '```json\n{"label":"first","value":"42"}\n```',
    }); // the answer stays
    expect(repair.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('- /value must be integer'),
    });
    expect(repair.output).toMatchObject({ type: 'json_schema', strict: true }); // the repair call asks for the schema too
    expect(repair.tools).toEqual(reqs[0]!.tools); // same call mode
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
  });

  it('Chat: still invalid after the repair turn → failed output_invalid with the errors, exactly one terminal event', async () => {
    const run = await start('invalid', { model: CHAT });
    const { snap, events, messages } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({
      status: 'failed',
      stopReason: null,
      iteration: 2,
      outputJson: null,
      error: { code: 'output_invalid', message: expect.stringContaining("must have required property 'value'") },
    });
    expect(ofType(events, 'output.invalid').map((e) => e.data.repair)).toEqual([true, false]);
    expect(events.at(-1)!.type).toBe('run.failed');
    expect(events.at(-2)!).toMatchObject({ type: 'iteration.completed', data: { iteration: 2 } });
    expect(messages.filter((m) => m.role === 'assistant')).toHaveLength(2); // both answers recorded
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_runs_finished_total\{status="failed",stop_reason="none"\} [1-9]/);
  });

  it('Responses (the openai default): text.format json_schema strict on every call; valid, repaired, still invalid', async () => {
    const RESPONSES = { provider: 'openai', name: 'gpt-4o-mini' };
    const valid = await start('valid', { model: RESPONSES });
    const ok = await finishedRun(s.a, valid.id);
    expect(ok.snap).toMatchObject({ status: 'completed', iteration: 1, outputJson: { label: 'seventeen', value: 17 } });
    const [req] = calls(valid);
    expect(req!.body.text).toEqual({
      format: { type: 'json_schema', name: 'result', strict: true, schema: { ...RESULT, additionalProperties: false } },
    });
    expect(req!.body.store).toBe(false);
    const repaired = await start('repair', { model: RESPONSES });
    const fixed = await finishedRun(s.a, repaired.id);
    expect(fixed.snap).toMatchObject({ status: 'completed', iteration: 2, outputJson: { label: 'fixed', value: 42 } });
    const [, repairReq] = calls(repaired);
    expect(repairReq!.messages.at(-1)).toMatchObject({
      role: 'user',
      content: expect.stringContaining('- /value must be integer'),
    });
    expect(repairReq!.body.text).toMatchObject({ format: { type: 'json_schema', strict: true } });
    const invalid = await start('invalid', { model: RESPONSES });
    const failed = await finishedRun(s.a, invalid.id);
    expect(failed.snap).toMatchObject({ status: 'failed', iteration: 2, error: { code: 'output_invalid' } });
    expect(calls(invalid)).toHaveLength(2);
  });

  it.each([
    ['DeepSeek', { provider: 'deepseek', name: 'deepseek-chat' }],
    ['Gemini 2.5', { provider: 'google', name: 'gemini-2.5-flash' }],
    ['Gemini 3', { provider: 'google', name: 'gemini-3-flash-preview' }],
  ])('%s: valid the first time; repaired; still invalid, giving output_invalid', async (_name, model) => {
    const valid = await finishedRun(s.a, (await start('valid', { model })).id);
    expect(valid.snap).toMatchObject({
      status: 'completed',
      iteration: 1,
      outputJson: { label: 'seventeen', value: 17 },
    });
    const repaired = await start('repair', { model });
    const fixed = await finishedRun(s.a, repaired.id);
    expect(fixed.snap).toMatchObject({ status: 'completed', iteration: 2, outputJson: { label: 'fixed', value: 42 } });
    expect(lastUser(calls(repaired)[1]!)).toContain('- /value must be integer');
    const failed = await finishedRun(s.a, (await start('invalid', { model })).id);
    expect(failed.snap).toMatchObject({
      status: 'failed',
      iteration: 2,
      outputJson: null,
      error: { code: 'output_invalid' },
    });
    expect(failed.events.at(-1)!.type).toBe('run.failed');
  });

  it('DeepSeek: JSON mode, with the schema (and the word json) in a system message', async () => {
    const run = await start('valid', { model: { provider: 'deepseek', name: 'deepseek-chat' }, system: 'Be exact.' });
    const { snap } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({ status: 'completed', outputJson: { label: 'seventeen', value: 17 } });
    const [req] = calls(run);
    expect(req!.output).toEqual({ type: 'json_object' });
    expect(req!.body.response_format).toEqual({ type: 'json_object' });
    expect(req!.messages[0]).toEqual({ role: 'system', content: 'Be exact.' });
    expect(req!.messages[1]!.content).toContain(JSON.stringify(RESULT)); // the schema as given (no OpenAI in the chain)
  });

  it('Gemini 2.5 with tools: no responseJsonSchema beside function declarations (the schema is in the instruction), and it on the tool-less finalize call', async () => {
    const run = await start('tools', {
      model: { provider: 'google', name: 'gemini-2.5-flash' },
      tools: ['calculator'],
      limits: { maxIterations: 1 },
    });
    const { snap } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'max_iterations',
      iteration: 2,
      outputJson: { label: 'product', value: 391 },
    });
    const reqs = calls(run);
    expect(reqs.map((r) => [r.tools.length > 0, r.output?.type ?? null])).toEqual([
      [true, null],
      [false, 'gemini_json'],
    ]);
    expect(systemText(reqs[0]!)).toContain(JSON.stringify(RESULT));
    expect(reqs[1]!.output).toEqual({ type: 'gemini_json', mimeType: 'application/json', schema: RESULT });
    expect(systemText(reqs[1]!)).not.toContain(JSON.stringify(RESULT)); // native there: no instruction needed
  });

  it('Gemini 3 with tools: responseJsonSchema on every call, tools or not', async () => {
    const run = await start('tools', { model: { provider: 'google', name: 'gemini-3-flash' }, tools: ['calculator'] });
    const { snap } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'final_answer',
      iteration: 2,
      outputJson: { label: 'product', value: 391 },
    });
    const reqs = calls(run);
    expect(reqs.map((r) => [r.tools.length > 0, r.output?.type])).toEqual([
      [true, 'gemini_json'],
      [true, 'gemini_json'],
    ]);
  });

  it('ReAct: the schema is in the Final Answer instructions, no native format is sent, and a prose answer is repaired', async () => {
    const run = await start('react', { model: CHAT, strategy: 'react', tools: ['calculator'] });
    const { snap, events } = await finishedRun(s.a, run.id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 3, outputJson: { label: 'react', value: 42 } });
    expect(ofType(events, 'output.invalid')[0]!.data).toMatchObject({
      iteration: 2,
      repair: true,
      errors: [expect.stringMatching(/not JSON/)],
    });
    const reqs = calls(run);
    expect(reqs).toHaveLength(3);
    for (const r of reqs) {
      expect(r.body.response_format).toBeUndefined();
      expect(systemText(r)).toMatch(/Final Answer: <JSON matching the schema "result"/);
      expect(systemText(r)).toContain(JSON.stringify({ ...RESULT, additionalProperties: false })); // the strict form: OpenAI is in the chain
    }
    expect(lastUser(reqs[2]!)).toMatch(/the answer is not JSON/);
  });

  describe('intake refuses an output schema it cannot use (400, the path in details)', () => {
    const refused = async (body: Record<string, unknown>) => {
      const r = await s.a.createRun({ input: 'hi', model: CHAT, ...body });
      expect(r.status).toBe(400);
      expect(r.json.error.code).toBe('invalid_request');
      return r.json.error.details as Array<{ path: string[]; code: string; rule?: string; message: string }>;
    };
    it('a schema ajv cannot compile', async () => {
      expect(
        await refused({ output: { schema: { type: 'object', properties: { a: { type: 'strin' } } } } }),
      ).toMatchObject([{ path: ['output', 'schema'], code: 'invalid_schema' }]);
    });
    it('a schema OpenAI strict mode cannot take without changing its meaning — also when OpenAI is only a fallback — while Gemini alone takes it', async () => {
      const optional = { ...RESULT, required: ['label'] }; // value may be left out
      const [issue] = await refused({ output: { schema: optional } });
      expect(issue).toMatchObject({
        path: ['output', 'schema', 'properties', 'value'],
        rule: 'optional_property',
        message: expect.stringMatching(/output\.schema\/properties\/value/),
      });
      expect(
        await refused({
          model: { provider: 'google', name: 'gemini-3-flash' },
          fallbacks: [CHAT],
          output: { schema: { ...RESULT, additionalProperties: true } },
        }),
      ).toMatchObject([{ rule: 'additional_properties' }]);
      const gemini = await s.a.createRun({
        input: '[valid] gemini alone',
        model: { provider: 'google', name: 'gemini-3-flash' },
        output: { schema: optional },
      });
      expect(gemini.status).toBe(202);
      expect((await finishedRun(s.a, gemini.json.id)).snap).toMatchObject({
        status: 'completed',
        outputJson: { label: 'seventeen', value: 17 },
      });
    });
    it('a schema nested too deep, and a pattern that could take exponential time', async () => {
      let deep: Record<string, unknown> = { type: 'string' };
      for (let i = 0; i < 40; i++) deep = { type: 'array', items: deep };
      expect(
        await refused({ model: { provider: 'google', name: 'gemini-3-flash' }, output: { schema: deep } }),
      ).toMatchObject([
        { path: ['output', 'schema'], code: 'schema_too_complex', message: expect.stringMatching(/deeper than 32/) },
      ]);
      const redos = { ...RESULT, properties: { ...RESULT.properties, label: { type: 'string', pattern: '^(a+)+$' } } };
      expect(await refused({ output: { schema: redos } })).toMatchObject([
        { path: ['output', 'schema', 'properties', 'label', 'pattern'], code: 'schema_too_complex' },
      ]);
    });
  });
});

describe('structured output survives a crash (kill -9 of the orchestrator mid-repair)', () => {
  let s: ProcessStack | undefined;
  afterAll(async () => {
    await s?.stop();
  });

  it('the repair turn is appended once, the cut-off repair call is retried, the run completes with the repaired answer', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `w${i}`).join(' ');
    const script = (req: MockRequest): ReplySpec =>
      repairing(req) ? { text: answer(words, 7), chunking: 'fine', delayMs: 40 } : { text: 'not json at all' };
    // a 10 s lock: a process stalled by a loaded machine keeps its iteration's lock, so no model call is repeated by a
    // second delivery (the exact retry and request counts below); the kill -9 is recovered once the lock expires (≤ 15 s)
    s = await ProcessStack.start(['api', 'orchestrator'], { script, env: { AGENTLOOP_LOCK_MS: '10000' } });
    const id = await s.a.startRun({ input: 'crash me', model: CHAT, output: { schema: RESULT } });
    await until('deltas of the repair call', async () =>
      (await s!.a.events(id, { maxEvents: 200, timeoutMs: 300 })).events.some(
        (e) => e.type === 'message.delta' && e.data.iteration === 2,
      ),
    );
    await s.kill('orchestrator', 'SIGKILL');
    await s.spawn('orchestrator#2');
    const { snap, events, messages } = await finishedRun(s.a, id, 60_000);
    expect(snap).toMatchObject({ status: 'completed', iteration: 2, outputJson: { label: words, value: 7 } });
    expect(ofType(events, 'output.invalid')).toHaveLength(1);
    expect(ofType(events, 'llm.retry').map((e) => e.data)).toEqual([
      expect.objectContaining({ discardOutput: true, reason: 'worker_restarted' }),
    ]);
    const repairs = messages.filter((m) => m.role === 'user' && /Your final answer is not valid/.test(m.content ?? ''));
    expect(repairs).toHaveLength(1);
    const reqs = s.mock.requests;
    expect(reqs).toHaveLength(3); // the first answer (never asked again), the cut-off repair call and its retry
    expect(reqs[2]!.messages.filter((m) => m.role === 'user')).toHaveLength(2); // the input and one repair message
    expect(snap.usage.llmCalls).toBe(2); // the cut-off call was never recorded
  }, 120_000);
});
