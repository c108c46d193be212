import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SUMMARIZE_SYSTEM } from '@agentloop/llm';
import { checkEvents, checkTranscript, stepOf, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario } from '../test-support/helpers.js';

const WINDOW = 4000;
const isSummarization = (req: MockRequest) => req.messages[0]?.content === SUMMARIZE_SYSTEM;
/** Calls issued per run (a compressed transcript no longer shows them all, so the script keeps its own count). */
const issued = new Map<string, number>();
const working =
  (steps: number) =>
  (req: MockRequest): ReplySpec => {
    const key = req.messages.find((m) => m.role === 'user' && /\[\w+\] /.test(m.content ?? ''))!.content!;
    const n = issued.get(key) ?? 0;
    if (req.tools.length && n < steps) {
      issued.set(key, n + 1);
      return { toolCalls: [{ name: 'big', args: { n: 3000 + n } }] };
    }
    return { text: `finished after ${n} calls, seeing ${stepOf(req)} of them` };
  };
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  long: working(8),
  failsum: working(6),
  off: working(6),
  tight: working(6),
  // a parallel batch whose results cannot fit together, however the older turns are compressed
  wide: (req) =>
    req.tools.length
      ? { toolCalls: [0, 1, 2, 3, 4].map((i) => ({ name: 'big', args: { n: 12_000 + i } })) }
      : { text: 'answered from what fit' },
};

describe('context pressure: compression ladder (issue 4)', () => {
  let s: InProcessStack;
  let summarizerFails = false;
  beforeAll(async () => {
    s = await InProcessStack.start({
      // the mock enforces the window with the provider's real context_length_exceeded error
      contextWindows: { 'gpt-4o-mini': WINDOW, 'tight-model': 2500 },
      script: (req) => {
        if (isSummarization(req))
          return summarizerFails
            ? { error: { status: 500, message: 'summarizer down' } }
            : { text: '- the user wants big results\n- several big results were fetched' };
        return byScenario(scenarios, 'long')(req);
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });
  const body = (scenario: string, extra: Record<string, unknown> = {}) => ({
    input: `[${scenario}] fetch big results, then answer (${Math.random()})`,
    system: 'You are a careful assistant.',
    model: { provider: 'openai', name: 'gpt-4o-mini', contextWindow: WINDOW },
    tools: ['big'],
    limits: { maxIterations: 20 },
    ...extra,
  });
  const finished = async (id: string) => {
    const snap = await s.a.waitTerminal(id, 60_000);
    const messages = (await s.a.getRun(id, 'messages')).json.messages!;
    const history = (await s.a.getRun(id, 'history')).json.history!;
    const events = (await s.a.events(id)).events;
    expect(checkTranscript(messages)).toEqual([]);
    expect(checkTranscript(history)).toEqual([]);
    expect(checkEvents(events)).toEqual([]);
    return { snap, messages, history, events };
  };
  const rejected = (from: number) => s.mock.journal.slice(from).filter((j) => j.status === 400).length;

  it('a long run with large results compresses and completes; the mock rejects at most one request', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun(body('long'));
    const { snap, messages, history, events } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'final_answer' });
    const compressed = events.filter((e) => e.type === 'context.compressed');
    expect(compressed.length).toBeGreaterThanOrEqual(1);
    expect(compressed[0]!.data).toMatchObject({ strategy: 'summarize' });
    expect(Number(compressed[0]!.data.tokensAfter)).toBeLessThan(Number(compressed[0]!.data.tokensBefore));
    expect(rejected(before)).toBeLessThanOrEqual(1);
    expect(messages[0]).toEqual({ role: 'system', content: 'You are a careful assistant.' });
    expect(messages.some((m) => m.content?.startsWith('Summary of the earlier part'))).toBe(true);
    expect(history.length).toBeGreaterThan(messages.length); // the full record is kept
    expect(history.filter((m) => m.role === 'tool')).toHaveLength(8);
    // summaries are billed like loop calls (SPEC §3): every answered model request of the run is in its usage
    const answered = s.mock.journal.slice(before).filter((j) => j.status === 200);
    const summaries = answered.filter((j) => isSummarization(j.req)).length;
    expect(summaries).toBeGreaterThanOrEqual(1);
    expect(snap.usage.llmCalls).toBe(answered.length);
    expect(snap.usage.llmCalls).toBe(snap.iteration + summaries);
  });

  it('falls back to pruning when the summarizer fails, and completes', async () => {
    summarizerFails = true;
    try {
      const id = await s.a.startRun(body('failsum'));
      const { snap, events } = await finished(id);
      expect(snap.status).toBe('completed');
      expect(events.some((e) => e.type === 'context.compressed' && e.data.strategy === 'prune')).toBe(true);
    } finally {
      summarizerFails = false;
    }
  });

  it('with compression off, answers the batch skipped and makes a final call without tools (context_limit)', async () => {
    const metricsBefore = (await s.anon.request('GET', '/metrics')).text;
    const count = (t: string) =>
      Number(/agentloop_tools_skipped_total\{reason="context_limit"\} (\d+)/.exec(t)?.[1] ?? 0);
    const id = await s.a.startRun(body('off', { context: { compression: 'off' } }));
    const { snap, messages } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'context_limit' });
    const skipped = messages.filter((m) => m.role === 'tool' && m.content?.includes('"skipped"'));
    expect(skipped.length).toBeGreaterThanOrEqual(1);
    expect(s.mock.requests.at(-1)!.tools).toEqual([]);
    expect(count((await s.anon.request('GET', '/metrics')).text)).toBeGreaterThan(count(metricsBefore));
  });

  it('with prune, an oversized parallel batch is answered skipped and the run ends context_limit instead of looping', async () => {
    const before = s.mock.journal.length;
    const id = await s.a.startRun(body('wide', { context: { compression: 'prune' } }));
    const { snap, messages } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'context_limit', output: 'answered from what fit' });
    expect(snap.iteration).toBe(2); // the batch, then the final call: no repeats until max_iterations
    const modelCalls = s.mock.journal.slice(before).filter((j) => j.status === 200);
    expect(modelCalls.map((j) => j.req.tools.length > 0)).toEqual([true, false]);
    expect(messages.filter((m) => m.role === 'tool' && m.content?.includes('"skipped"'))).toHaveLength(5);
  });

  it('when the provider still says context_length_exceeded, compresses and retries instead of failing', async () => {
    const before = s.mock.journal.length;
    // we believe the window is 8000; the provider enforces 2500
    const id = await s.a.startRun(
      body('tight', { model: { provider: 'openai', name: 'tight-model', contextWindow: 8000 } }),
    );
    const { snap, events } = await finished(id);
    expect(snap.status).toBe('completed');
    expect(events.some((e) => e.type === 'context.compressed')).toBe(true);
    expect(rejected(before)).toBeGreaterThanOrEqual(1);
  });
});
