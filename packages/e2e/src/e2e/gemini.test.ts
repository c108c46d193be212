import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoAgentScript, stepOf } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { finishedRun } from '../test-support/helpers.js';

describe('a Gemini run through the orchestrator (@google/genai against the mock Gemini API)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    const demo = demoAgentScript();
    s = await InProcessStack.start({
      script: (req) => {
        // the fallback scenario: OpenAI refuses the first iteration (429, then 500s) and answers the later ones
        const fallback = req.messages.some((m) => m.role === 'user' && m.content?.includes('[fallback]'));
        if (fallback && req.provider === 'openai' && stepOf(req) === 0)
          return {
            error:
              s.mock.journal.filter((j) => j.req.provider === 'openai').length === 0
                ? { status: 429, message: 'Rate limit reached', headers: { 'retry-after-ms': '10' } }
                : { status: 500, message: 'The server had an error' },
          };
        if (req.messages.some((m) => m.role === 'user' && m.content?.includes('[malformed]'))) {
          const result = req.messages.find((m) => m.role === 'tool');
          return result ? { text: `recovered after: ${result.content}` } : { finishReason: 'MALFORMED_FUNCTION_CALL' };
        }
        return demo(req);
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('completes three iterations with parallel calls, sending each thoughtSignature back on its functionCall part', async () => {
    const id = await s.a.startRun({
      input: 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
      model: { provider: 'google', name: 'gemini-3-flash' },
      tools: ['calculator', 'current_time'],
    });
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 3 });
    expect(snap.output).toMatch(/^17 × 23 = 391, and \(2 \+ 3\) × 4 = 20\./);
    const gemini = s.mock.journal.filter((j) => j.req.provider === 'google');
    expect(gemini.map((j) => j.status)).toEqual([200, 200, 200]);
    const firstBatch = messages.find((m) => m.toolCalls?.length === 2)!;
    const signature = firstBatch.toolCalls![0]!.providerData?.thoughtSignature;
    expect(signature).toEqual(expect.any(String));
    expect(firstBatch.toolCalls![1]!.providerData).toBeUndefined(); // only the first parallel call carries one
    const second = gemini[1]!.req.body as { contents: Array<{ role: string; parts: Array<Record<string, any>> }> };
    const modelTurn = second.contents.find((c) => c.role === 'model')!;
    expect(modelTurn.parts[modelTurn.parts.findIndex((p) => p.functionCall)]!.thoughtSignature).toBe(signature);
    expect(second.contents.at(-1)!.parts.map((p) => p.functionResponse?.name)).toEqual(['calculator', 'calculator']);
  });

  it('MALFORMED_FUNCTION_CALL twice becomes an invalid_arguments tool error the model recovers from', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({
      input: '[malformed] look it up',
      model: { provider: 'google', name: 'gemini-3-flash' },
      tools: ['lookup'],
    });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 2 });
    expect(s.mock.journal.length - before).toBe(3); // asked, asked once more, then the model saw the error
    const ended = events.find((e) => e.type === 'tool.call' && e.data.status === 'error')!;
    expect(ended.data).toMatchObject({ name: 'lookup', error: { code: 'invalid_arguments' } });
    expect(snap.output).toContain('"code":"invalid_arguments"');
  });

  it('falls back to Gemini when OpenAI answers 429 then 500, then goes back to OpenAI with a Gemini turn in the transcript', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun({
      input: '[fallback] What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      fallbacks: [{ provider: 'google', name: 'gemini-3-flash' }],
      tools: ['calculator', 'current_time'],
    });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    const journal = s.mock.journal.slice(before);
    expect(journal.map((j) => `${j.req.provider}:${j.status}`)).toEqual([
      'openai:429',
      'openai:500',
      'openai:500',
      'google:200',
      'openai:200',
      'openai:200',
    ]);
    expect(events.filter((e) => e.type === 'llm.retry').length).toBe(2);
    expect(events.find((e) => e.type === 'llm.fallback')!.data).toMatchObject({
      from: 'openai/gpt-4o-mini',
      to: 'google/gemini-3-flash',
    });
    // the strict OpenAI Responses mock accepted a transcript holding Gemini's calls (ids generated here, no item ids,
    // no signature sent to OpenAI)
    const afterFallback = journal[4]!.req.body as { input: Array<Record<string, any>> };
    expect(journal[4]!.req.wire).toBe('responses');
    const geminiCalls = afterFallback.input.filter((x) => x.type === 'function_call');
    expect(geminiCalls.map((c) => [c.id, c.call_id])).toEqual([
      [undefined, expect.stringMatching(/^call_/)],
      [undefined, expect.stringMatching(/^call_/)],
    ]);
    expect(afterFallback.input.filter((x) => x.type === 'function_call_output').map((x) => x.call_id)).toEqual(
      geminiCalls.map((c) => c.call_id),
    );
    expect(JSON.stringify(afterFallback)).not.toContain('thoughtSignature');
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    expect(metrics).toMatch(
      /agentloop_llm_fallbacks_total\{from="openai\/gpt-4o-mini",to="google\/gemini-3-flash"\} 1/,
    );
  });
});

describe('fallback away from DeepSeek thinking mode and back', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    const demo = demoAgentScript();
    s = await InProcessStack.start({
      script: (req) => {
        const step = stepOf(req);
        if (req.provider === 'deepseek' && step === 1)
          return { error: { status: 503, message: 'Service Unavailable' } };
        const reply = demo(req);
        return req.provider === 'deepseek' ? { ...reply, reasoning: `thinking about step ${step}` } : reply;
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('round-trips reasoning_content to DeepSeek, and DeepSeek accepts the Gemini turn in between', async () => {
    const id = await s.a.startRun({
      input: 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
      model: { provider: 'deepseek', name: 'deepseek-v4-flash' },
      fallbacks: [{ provider: 'google', name: 'gemini-3-flash' }],
      tools: ['calculator', 'current_time'],
    });
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(s.mock.journal.map((j) => `${j.req.provider}:${j.status}`)).toEqual([
      'deepseek:200',
      'deepseek:503',
      'deepseek:503',
      'deepseek:503',
      'google:200',
      'deepseek:200',
    ]);
    const [first, geminiTurn] = messages.filter((m) => m.role === 'assistant' && m.toolCalls?.length);
    expect(first!.reasoning).toBe('thinking about step 0');
    expect([first!.providerData?.provider, geminiTurn!.providerData?.provider]).toEqual(['deepseek', 'google']);
    expect(geminiTurn!.reasoning).toBeUndefined();
    const last = s.mock.journal.at(-1)!.req.body as { messages: Array<Record<string, any>> };
    const sent = last.messages.filter((m) => m.role === 'assistant');
    expect(sent.map((m) => m.reasoning_content)).toEqual(['thinking about step 0', '']);
  });
});

describe('a stream cut after partial output', () => {
  let s: InProcessStack;
  let cut = true;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: (req) => {
        if (stepOf(req) === 0) return { toolCalls: [{ name: 'calculator', args: { expression: '2+2' } }] };
        const once = cut;
        cut = false;
        return { text: 'The answer is four, as computed.', chunking: 'fine', ...(once ? { cutAfterFrames: 4 } : {}) };
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('is retried on the same model with discardOutput; the final deltas after the retry equal the output', async () => {
    const id = await s.a.startRun({
      input: 'add',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      fallbacks: [{ provider: 'google', name: 'gemini-3-flash' }],
      tools: ['calculator'],
    });
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.output).toBe('The answer is four, as computed.');
    const retry = events.find((e) => e.type === 'llm.retry')!;
    expect(retry.data).toMatchObject({ provider: 'openai', discardOutput: true });
    expect(events.some((e) => e.type === 'llm.fallback')).toBe(false); // output was shown: no silent fallback
    const after = events
      .slice(events.indexOf(retry))
      .filter((e) => e.type === 'message.delta')
      .map((e) => e.data.text)
      .join('');
    expect(after).toBe(snap.output);
  });
});

describe('a long rate limit defers the iteration job instead of holding a worker', () => {
  let s: InProcessStack;
  let refused = 0;
  beforeAll(async () => {
    s = await InProcessStack.start({
      env: { AGENTLOOP_LLM_MAX_WAIT_MS: '500' },
      script: () =>
        refused++ === 0
          ? {
              error: { status: 429, message: 'Rate limit reached for requests', headers: { 'retry-after-ms': '2500' } },
            }
          : { text: 'after the wait' },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('moves the job to delayed for the provider’s retry-after, then completes', async () => {
    const t0 = Date.now();
    const id = await s.a.startRun({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
    const { Queue } = await import('bullmq');
    const q = new Queue('orchestrator', { connection: s.redis, prefix: s.keyPrefix });
    let sawDelayed = false;
    for (let i = 0; i < 100 && !sawDelayed; i++) {
      sawDelayed =
        ((await q.getJobCounts('delayed')).delayed ?? 0) > 0 && ((await q.getJobCounts('active')).active ?? 0) === 0;
      await new Promise((r) => setTimeout(r, 20));
    }
    await q.close();
    expect(sawDelayed).toBe(true); // waiting out the limit holds no worker
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap).toMatchObject({ status: 'completed', output: 'after the wait' });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(2400);
    expect(events.find((e) => e.type === 'llm.retry')!.data.reason).toBe('rate_limit (deferred 3 s)');
  });
});
