import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { DeploymentKeys, QUEUES, advanceJobId } from '@agentloop/protocol';
import { SUMMARIZE_SYSTEM } from '@agentloop/llm';
import { demoAgentScript, stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun, until } from '../test-support/helpers.js';
import { OtlpReceiver, type ReceivedSpan } from '../test-support/otlp-receiver.js';

const demo = demoAgentScript({ delayMs: 5 });
const lastUser = (req: MockRequest) => req.messages.findLastIndex((m) => m.role === 'user');
/** Tool-call turns since the last user message (a thread's earlier runs do not count). */
const turnStep = (req: MockRequest) =>
  req.messages.slice(lastUser(req)).filter((m) => m.role === 'assistant' && m.toolCalls?.length).length;
const flakyCalls = new Map<string, number>();
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  broken: () => ({ error: { status: 400, message: 'no such thing' } }),
  // the first request of each [flaky] input fails with a 500, its retry answers
  flaky: (req) => {
    const key = req.messages.find((m) => m.role === 'user')!.content ?? '';
    flakyCalls.set(key, (flakyCalls.get(key) ?? 0) + 1);
    return flakyCalls.get(key) === 1 ? { error: { status: 500, message: 'boom' } } : { text: 'fine' };
  },
  demo: (req) => demo(req) as ReplySpec,
  thread: (req) => {
    if (turnStep(req) > 0) return { text: 'done' };
    return (req.messages[lastUser(req)]!.content ?? '').includes('email')
      ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
      : { toolCalls: [{ name: 'calculator', args: { expression: '2+2' } }] };
  },
  email: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'secret-body' } }] }
      : { text: `after: ${stepResults(req, 0)[0]}` },
};
const MODEL = { provider: 'openai', name: 'gpt-4o-mini' };
const DEMO = {
  input: 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
  model: MODEL,
  tools: ['calculator', 'current_time'],
};
const EMAIL = { input: '[email] tell them', model: MODEL, tools: ['send_email'] };
const ROLES = ['api', 'orchestrator', 'tool-runner'];
// prints every @opentelemetry module a process resolves: the probe of "no SDK loaded when off"
const PROBE = `--import=data:text/javascript,${encodeURIComponent("import{registerHooks}from'node:module';registerHooks({resolve(s,c,n){if(s.startsWith('@opentelemetry/'))process.stderr.write('otel-module '+s+'\\n');return n(s,c)}})")}`;
const CONTENT_KEYS = [
  'gen_ai.input.messages',
  'gen_ai.output.messages',
  'gen_ai.tool.call.arguments',
  'gen_ai.tool.call.result',
];

const sdkLoaded = (s: ProcessStack) =>
  [...s.procs.values()]
    .flatMap((p) => p.output)
    .filter((l) => /^otel-module @opentelemetry\/(sdk-trace|exporter|resources|context-async-hooks)/.test(l));

const invokes = (spans: ReceivedSpan[]) => spans.filter((x) => x.name === 'invoke_agent');
const lastEnd = (spans: ReceivedSpan[]) => Math.max(...spans.map((x) => x.endMs));
const firstStart = (spans: ReceivedSpan[]) => Math.min(...spans.map((x) => x.startMs));

function runSpans(r: OtlpReceiver, runId: string): ReceivedSpan[] {
  return r.spans.filter((s) => s.attributes['agentloop.run.id'] === runId);
}

async function spansOf(
  r: OtlpReceiver,
  runId: string,
  expected: { chat: number; tools: number; invoke: number },
): Promise<ReceivedSpan[]> {
  const count = (prefix: string) => runSpans(r, runId).filter((s) => s.name.startsWith(prefix)).length;
  await until(
    `the spans of ${runId}`,
    () =>
      count('chat ') >= expected.chat &&
      count('execute_tool ') >= expected.tools &&
      count('invoke_agent') >= expected.invoke,
  );
  return runSpans(r, runId);
}

/** The roles on the demo script, exporting to a fresh OTLP receiver (`env` given its URL). */
async function tracedStack(
  env: (url: string) => Record<string, string>,
): Promise<{ r: OtlpReceiver; s: ProcessStack }> {
  const r = await OtlpReceiver.start();
  return { r, s: await ProcessStack.start(ROLES, { script: byScenario(scenarios, 'demo'), env: env(r.url) }) };
}

describe('tracing on (SPEC §8), each role its own process, OTLP http/json', () => {
  let s: ProcessStack;
  let r: OtlpReceiver;
  beforeAll(async () => {
    ({ r, s } = await tracedStack((url) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_SERVICE_NAME: 'agentloop-test',
      NODE_OPTIONS: PROBE,
      LOG_LEVEL: 'info',
    })));
  });
  afterAll(async () => {
    await s?.stop();
    await r?.close();
  });

  it('one trace per run: invoke_agent covering the run, recorded where it ended, a chat span per model call, an execute_tool span per tool, GenAI attributes, no content', async () => {
    const id = await s.a.startRun(DEMO);
    const { snap } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    const spans = await spansOf(r, id, { chat: 3, tools: 3, invoke: 1 });
    expect(new Set(spans.map((x) => x.traceId)).size).toBe(1);
    const [root, ...more] = invokes(spans);
    expect(more).toEqual([]);
    expect(snap.traceId).toBe(root!.traceId); // the snapshot names the run's trace (the console links it)
    // recorded when the run ended, by the process that ended it, with the ids stored at intake
    expect(root).toMatchObject({
      parentSpanId: '',
      roles: 'orchestrator',
      service: 'agentloop-test',
      encoding: 'json',
    });
    expect(`00-${root!.traceId}-${root!.spanId}-01`).toBe(
      await s.redis.hget(new DeploymentKeys(s.keyPrefix).run(id).state, 'tp'),
    );
    expect(root!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.conversation.id': id,
      'agentloop.tenant.id': expect.any(String),
      'agentloop.run.status': 'completed',
      'gen_ai.response.finish_reasons': [snap.stopReason],
      'gen_ai.usage.input_tokens': snap.usage.promptTokens,
      'gen_ai.usage.output_tokens': snap.usage.completionTokens,
    });
    expect(snap.usage.promptTokens).toBeGreaterThan(0);
    // the root covers the run: from its creation to its end, around every span under it
    const chats = spans.filter((x) => x.name.startsWith('chat '));
    const children = spans.filter((x) => x !== root);
    expect(root!.startMs).toBeLessThanOrEqual(firstStart(children));
    expect(root!.endMs).toBeGreaterThanOrEqual(lastEnd(children));
    expect(root!.endMs).toBeGreaterThanOrEqual(Date.parse(snap.createdAt));
    expect(chats.map((c) => c.name)).toEqual(['chat gpt-4o-mini', 'chat gpt-4o-mini', 'chat gpt-4o-mini']);
    for (const c of chats) {
      expect(c).toMatchObject({ parentSpanId: root!.spanId, roles: 'orchestrator' });
      expect(c.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-4o-mini',
        'gen_ai.conversation.id': id,
        'agentloop.run.id': id,
      });
      expect(c.attributes['gen_ai.usage.input_tokens']).toBeGreaterThan(0);
      expect(c.attributes['gen_ai.usage.output_tokens']).toBeGreaterThan(0);
    }
    expect(chats.map((c) => c.attributes['gen_ai.response.finish_reasons']).sort()).toEqual([
      ['stop'],
      ['tool_calls'],
      ['tool_calls'],
    ]);
    const tools = spans.filter((x) => x.name.startsWith('execute_tool '));
    expect(tools.map((t) => t.name).sort()).toEqual([
      'execute_tool calculator',
      'execute_tool calculator',
      'execute_tool current_time',
    ]);
    for (const t of tools) {
      expect(t).toMatchObject({ parentSpanId: root!.spanId, roles: 'tool-runner' });
      expect(t.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.call.id': expect.any(String),
        'gen_ai.conversation.id': id,
        'agentloop.tool.status': 'completed',
      });
    }
    for (const x of spans) for (const k of CONTENT_KEYS) expect(x.attributes[k], `${x.name} ${k}`).toBeUndefined();
    expect(sdkLoaded(s).length).toBeGreaterThan(0); // the probe sees the SDK when it is on
  });

  it('the iteration and model-latency histograms carry trace ids as exemplars (OpenMetrics)', async () => {
    const url = /metrics=(\S+)/.exec(
      s.procs.get('orchestrator')!.output.find((l) => l.startsWith('agentloop ready'))!,
    )![1]!;
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toMatch(/^application\/openmetrics-text/);
    const text = await res.text();
    const traced = new Set(r.spans.map((x) => x.traceId));
    for (const metric of [
      'agentloop_llm_request_duration_seconds_bucket',
      'agentloop_iteration_overhead_seconds_bucket',
    ]) {
      const ids = [
        ...text.matchAll(new RegExp(`^${metric}\\{[^}]*\\} \\d+ # \\{trace_id="([0-9a-f]{32})"\\}`, 'gm')),
      ].map((m) => m[1]!);
      expect(ids.length, metric).toBeGreaterThan(0);
      for (const id of ids) expect(traced.has(id), `${metric} exemplar ${id}`).toBe(true);
    }
  });

  it('after an approval pause: the root ends at the park, the resumed segment covers resume → end and links to the root; each once, whatever is delivered again', async () => {
    const id = await s.a.startRun(EMAIL);
    const paused = await s.a.waitFor(id, (x) => x.status === 'paused');
    const decide = () =>
      s.a.request('POST', `/v1/runs/${id}/decisions`, {
        decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
      });
    const [one, two] = await Promise.all([decide(), decide()]);
    expect([one.status, two.status].sort()).toEqual([202, 409]);
    const { snap } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    // every iteration's job delivered again after the end: each answers stale, nothing is recorded twice
    const q = new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix });
    try {
      for (const k of [1, 2])
        await q.add(
          'advance',
          { runId: id, iteration: k },
          { jobId: advanceJobId(id, k, 'again'), removeOnComplete: true, removeOnFail: true },
        );
      await until('the duplicates processed', async () =>
        Object.values(await q.getJobCounts('waiting', 'active', 'prioritized')).every((n) => n === 0),
      );
    } finally {
      await q.close();
    }
    // a barrier: a later run's root, recorded by the orchestrator after the duplicates, arrives after anything they recorded
    const later = await s.a.startRun({ input: `[flaky] barrier ${Date.now()}`, model: MODEL });
    expect((await finishedRun(s.a, later)).snap.status).toBe('completed');
    await spansOf(r, later, { chat: 1, tools: 0, invoke: 1 });
    const spans = await spansOf(r, id, { chat: 2, tools: 1, invoke: 2 });
    expect(new Set(spans.map((x) => x.traceId)).size).toBe(1);
    expect(invokes(spans)).toHaveLength(2);
    const [root, resumed] = [
      spans.find((x) => x.name === 'invoke_agent' && !x.attributes['agentloop.resumed'])!,
      spans.find((x) => x.attributes['agentloop.resumed'] === true)!,
    ];
    expect(resumed).toMatchObject({ name: 'invoke_agent', parentSpanId: '' });
    expect(resumed.links).toEqual([
      { traceId: root.traceId, spanId: root.spanId, attributes: { 'agentloop.link': 'run_root' } },
    ]);
    const chats = spans.filter((x) => x.name.startsWith('chat '));
    expect(chats.map((c) => c.parentSpanId).sort()).toEqual([root.spanId, resumed.spanId].sort());
    const tool = spans.find((x) => x.name === 'execute_tool send_email')!;
    expect(tool.parentSpanId).toBe(resumed.spanId);
    // the root: creation → park (its chat inside, the resume after); the resumed segment: resume → end, around its spans
    const [first, second] = [
      chats.find((c) => c.parentSpanId === root.spanId)!,
      chats.find((c) => c.parentSpanId === resumed.spanId)!,
    ];
    expect(root.startMs).toBeLessThanOrEqual(first.startMs);
    expect(root.endMs).toBeGreaterThanOrEqual(first.endMs);
    expect(root.endMs).toBeLessThanOrEqual(resumed.startMs);
    expect(root.attributes).toMatchObject({
      'agentloop.run.status': 'paused',
      'gen_ai.response.finish_reasons': ['paused'],
    });
    expect(resumed.startMs).toBeLessThanOrEqual(Math.min(tool.startMs, second.startMs));
    expect(resumed.endMs).toBeGreaterThanOrEqual(Math.max(tool.endMs, second.endMs));
    expect(resumed.attributes).toMatchObject({
      'agentloop.run.status': 'completed',
      'gen_ai.response.finish_reasons': [snap.stopReason],
      'gen_ai.usage.input_tokens': snap.usage.promptTokens,
      'gen_ai.usage.output_tokens': snap.usage.completionTokens,
    });
    expect(JSON.stringify(spans)).not.toContain('secret-body');
    // the run's log lines carry its trace id
    const logged = s.procs
      .get('tool-runner')!
      .output.filter((l) => l.includes('"email sent"') && l.includes(id))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatchObject({ runId: id, trace_id: root.traceId, span_id: tool.spanId });
  });

  it('a parked run cancelled: its root ends at the park, once, and a closing span linked to it says how the run ended', async () => {
    const id = await s.a.startRun(EMAIL);
    await s.a.waitFor(id, (x) => x.status === 'paused');
    const [one, two] = await Promise.all([s.a.cancel(id), s.a.cancel(id)]);
    expect([one.status, two.status].sort()).toEqual([202, 409]);
    expect((await s.a.waitTerminal(id)).status).toBe('cancelled');
    const spans = await spansOf(r, id, { chat: 1, tools: 0, invoke: 2 });
    const tp = (await s.redis.hget(new DeploymentKeys(s.keyPrefix).run(id).state, 'tp'))!;
    const roots = spans.filter((x) => tp === `00-${x.traceId}-${x.spanId}-01`);
    expect(roots).toHaveLength(1);
    const [root, closing] = [roots[0]!, invokes(spans).find((x) => x !== roots[0])!];
    expect(root.attributes).toMatchObject({ 'agentloop.run.status': 'paused' });
    expect(root.endMs).toBeGreaterThanOrEqual(spans.find((x) => x.name.startsWith('chat '))!.endMs);
    expect(closing).toMatchObject({
      parentSpanId: '',
      traceId: root.traceId,
      roles: 'api',
      links: [{ traceId: root.traceId, spanId: root.spanId, attributes: { 'agentloop.link': 'run_root' } }],
    });
    expect(closing.attributes).toMatchObject({
      'agentloop.run.status': 'cancelled',
      'agentloop.ended_parked': true,
      'gen_ai.response.finish_reasons': ['cancelled'],
    });
    expect(closing.startMs).toBeGreaterThanOrEqual(root.endMs);
    expect(invokes(spans)).toHaveLength(2);
  });

  it('a retried model call is one chat span with the retry as an event', async () => {
    const id = await s.a.startRun({ input: `[flaky] ${Date.now()}`, model: MODEL });
    expect((await finishedRun(s.a, id)).snap.status).toBe('completed');
    const [chat] = (await spansOf(r, id, { chat: 1, tools: 0, invoke: 1 })).filter((x) => x.name.startsWith('chat '));
    expect(chat!.events).toEqual([
      {
        name: 'llm.retry',
        attributes: {
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'gpt-4o-mini',
          'agentloop.attempt': 2,
          'agentloop.reason': expect.any(String),
        },
      },
    ]);
    expect(chat!.attributes['gen_ai.response.finish_reasons']).toEqual(['stop']);
    expect(chat!.status).toBe(0);
    // a model call that fails for good: its span says so
    const failed = await s.a.startRun({ input: '[broken] hi', model: MODEL });
    expect((await s.a.waitTerminal(failed)).status).toBe('failed');
    const [bad] = (await spansOf(r, failed, { chat: 1, tools: 0, invoke: 1 })).filter((x) =>
      x.name.startsWith('chat '),
    );
    expect(bad!.status).toBe(2);
    expect(bad!.attributes['error.type']).toBe('LlmError');
    const [failedRoot] = invokes(await spansOf(r, failed, { chat: 1, tools: 0, invoke: 1 }));
    expect(failedRoot).toMatchObject({
      status: 2,
      attributes: expect.objectContaining({ 'agentloop.run.status': 'failed', 'error.type': expect.any(String) }),
    });
    expect(failedRoot!.endMs).toBeGreaterThanOrEqual(bad!.endMs);
  });

  it("a run started without a trace in its job (a thread's next run, started by the relay) still gets its whole tree", async () => {
    const thread = {
      model: MODEL,
      tools: ['send_email', 'calculator'],
      threadId: `t${Date.now()}`,
      threadPolicy: 'enqueue',
    };
    const first = await s.a.startRun({ ...thread, input: '[thread] send an email' });
    const paused = await s.a.waitFor(first, (x) => x.status === 'paused');
    const next = await s.a.startRun({ ...thread, input: '[thread] now add' }); // waits for the thread
    await s.a.request('POST', `/v1/runs/${first}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect((await finishedRun(s.a, next)).snap.status).toBe('completed');
    const spans = await spansOf(r, next, { chat: 2, tools: 1, invoke: 1 });
    const root = spans.find((x) => x.name === 'invoke_agent')!;
    expect(spans.every((x) => x.traceId === root.traceId)).toBe(true);
    expect(spans.filter((x) => x !== root).map((x) => [x.name, x.parentSpanId])).toEqual(
      expect.arrayContaining([
        ['chat gpt-4o-mini', root.spanId],
        ['execute_tool calculator', root.spanId],
      ]),
    );
  });
});

describe('tracing on with content capture, OTLP http/protobuf', () => {
  let s: ProcessStack;
  let r: OtlpReceiver;
  beforeAll(async () => {
    ({ r, s } = await tracedStack((url) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT: 'true',
    })));
  });
  afterAll(async () => {
    await s?.stop();
    await r?.close();
  });

  it('records prompts, answers, arguments and results only when asked', async () => {
    const id = await s.a.startRun(EMAIL);
    const paused = await s.a.waitFor(id, (x) => x.status === 'paused');
    await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    await finishedRun(s.a, id);
    const spans = await spansOf(r, id, { chat: 2, tools: 1, invoke: 2 });
    expect(spans.every((x) => x.encoding === 'protobuf')).toBe(true);
    expect(new Set(spans.map((x) => x.traceId)).size).toBe(1);
    const first = spans.find(
      (x) => x.name.startsWith('chat ') && String(x.attributes['gen_ai.input.messages']).includes('[email] tell them'),
    )!;
    expect(first).toBeDefined();
    expect(String(first.attributes['gen_ai.output.messages'])).toContain('send_email');
    expect(spans.find((x) => x.name === 'execute_tool send_email')!.attributes['gen_ai.tool.call.arguments']).toContain(
      'secret-body',
    );
  });
});

describe('tracing the compressor (its own process): a summary is a compress span of the run', () => {
  let s: ProcessStack;
  let r: OtlpReceiver;
  const calls = new Map<string, number>();
  beforeAll(async () => {
    r = await OtlpReceiver.start();
    s = await ProcessStack.start([...ROLES, 'compressor'], {
      contextWindows: { 'gpt-4o-mini': 4000 },
      // large results fill the window until the orchestrator asks for a summary
      script: (req) => {
        if (req.messages[0]?.content === SUMMARIZE_SYSTEM) return { text: '- the user wants big results' };
        const key = req.messages.find((m) => m.role === 'user')!.content ?? '';
        const n = calls.get(key) ?? 0;
        if (req.tools.length && n < 8)
          return (calls.set(key, n + 1), { toolCalls: [{ name: 'big', args: { n: 3000 + n } }] });
        return { text: 'finished' };
      },
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: r.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
    });
  });
  afterAll(async () => {
    await s?.stop();
    await r?.close();
  });

  it("the compress span hangs under the run's segment, inside it, with its outcome", async () => {
    const id = await s.a.startRun({
      input: `fetch big results (${Date.now()})`,
      model: { ...MODEL, contextWindow: 4000 },
      tools: ['big'],
      limits: { maxIterations: 20 },
    });
    expect((await s.a.waitTerminal(id, 60_000)).status).toBe('completed');
    expect((await s.a.events(id)).events.some((e) => e.type === 'context.compressed')).toBe(true);
    await until('the compress span', () => runSpans(r, id).some((x) => x.name === 'compress'));
    const spans = await spansOf(r, id, { chat: 1, tools: 1, invoke: 1 });
    const [root] = invokes(spans);
    const compress = spans.filter((x) => x.name === 'compress');
    for (const c of compress) {
      expect(c).toMatchObject({ traceId: root!.traceId, parentSpanId: root!.spanId, roles: 'compressor' });
      expect(c.startMs).toBeGreaterThanOrEqual(root!.startMs);
      expect(c.endMs).toBeLessThanOrEqual(root!.endMs);
    }
    expect(compress.map((c) => c.attributes['agentloop.compress.outcome'])).toContain('ok');
    expect(
      compress.find((c) => c.attributes['agentloop.compress.outcome'] === 'ok')!.attributes[
        'agentloop.compress.tokens_after'
      ],
    ).toBeLessThan(
      compress.find((c) => c.attributes['agentloop.compress.outcome'] === 'ok')!.attributes[
        'agentloop.compress.tokens_before'
      ] as number,
    );
  });
});

describe('sampling (OTEL_TRACES_SAMPLER=traceidratio): a run is traced whole or not at all', () => {
  let s: ProcessStack;
  let r: OtlpReceiver;
  let stopped = false;
  beforeAll(async () => {
    ({ r, s } = await tracedStack((url) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      OTEL_TRACES_SAMPLER: 'traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.5',
    })));
  });
  afterAll(async () => {
    if (!stopped) await s?.stop();
    await r?.close();
  });

  it('the decision is minted into the stored traceparent, and every process follows it', async () => {
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        s.a.startRun({ input: `[thread] add ${i}`, model: MODEL, tools: ['calculator'] }),
      ),
    );
    for (const id of ids) expect((await s.a.waitTerminal(id)).status).toBe('completed');
    const keys = new DeploymentKeys(s.keyPrefix);
    const flags = await Promise.all(ids.map(async (id) => (await s.redis.hget(keys.run(id).state, 'tp'))!.slice(-2)));
    const sampled = ids.filter((_, i) => flags[i] === '01');
    expect(flags.every((f) => f === '01' || f === '00')).toBe(true);
    expect(sampled.length).toBeGreaterThan(0); // 12 runs at 0.5: all on one side once in 2,048
    expect(sampled.length).toBeLessThan(ids.length);
    for (const id of sampled) await spansOf(r, id, { chat: 2, tools: 1, invoke: 1 });
    await s.stop(); // every process flushes what it holds as it drains: whatever was recorded has arrived now
    stopped = true;
    for (const id of ids.filter((x) => !sampled.includes(x))) expect(runSpans(r, id), id).toEqual([]);
  });
});

describe('tracing off', () => {
  let r: OtlpReceiver;
  let off: ProcessStack | undefined;
  beforeAll(async () => {
    r = await OtlpReceiver.start();
  });
  afterAll(async () => {
    await off?.stop();
    await r?.close();
  });

  it('loads no SDK module, exports nothing and opens no connection (no endpoint; or OTEL_SDK_DISABLED=true)', async () => {
    off = await ProcessStack.start(ROLES, {
      script: byScenario(scenarios, 'demo'),
      env: { OTEL_SERVICE_NAME: 'agentloop-test', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', NODE_OPTIONS: PROBE },
    });
    const id = await off.a.startRun(DEMO);
    expect((await finishedRun(off.a, id)).snap.status).toBe('completed');
    expect(sdkLoaded(off)).toEqual([]);
    await off.stop();
    off = await ProcessStack.start(ROLES, {
      script: byScenario(scenarios, 'demo'),
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: r.url, OTEL_SDK_DISABLED: 'true', NODE_OPTIONS: PROBE },
    });
    const id2 = await off.a.startRun(DEMO);
    expect((await finishedRun(off.a, id2)).snap.status).toBe('completed');
    await off.stop();
    off = undefined;
    expect(r.connections).toBe(0);
    expect(r.spans).toEqual([]);
  });
});
