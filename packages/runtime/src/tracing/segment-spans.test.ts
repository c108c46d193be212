import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, RandomIdGenerator, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { pinned } from './pinned-trace.js';
import {
  currentSegmentTp,
  endSegment,
  parseSegment,
  resumeSegment,
  type SegmentRead,
  type SegmentStore,
} from './segment-spans.js';
import { formatTraceparent, parseTraceparent } from './traceparent.js';
import { tracingState } from './tracing-state.js';

const ROOT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const exporter = new InMemorySpanExporter();
let provider: TracerProvider;
/** What was recorded (SimpleSpanProcessor hands spans to the exporter asynchronously). */
const finished = async () => (await provider.forceFlush(), exporter.getFinishedSpans());

/** A run's state as a segment's end reads it, and the claims of its hash (HSETNX's answer). */
function run(fields: Partial<SegmentRead>): SegmentStore & { st: SegmentRead; reads: number } {
  const claimed = new Set<string>();
  const st: SegmentRead = {
    tp: ROOT,
    seg: null,
    createdAt: '1000',
    tenant: 't1',
    model: JSON.stringify({ provider: 'openai', name: 'gpt-4o-mini' }),
    status: 'completed',
    stopReason: 'final_answer',
    error: null,
    promptTokens: '120',
    completionTokens: '30',
    iteration: '2',
    ...fields,
  };
  const store = {
    st,
    reads: 0,
    read: async () => (store.reads++, { ...st }),
    claim: async (spanId: string) => !claimed.has(spanId) && Boolean(claimed.add(spanId)),
  };
  return store;
}

describe('segment spans (SPEC §8): each invoke_agent covers its segment, recorded once where it ends', () => {
  beforeAll(() => {
    const random = new RandomIdGenerator();
    const idGenerator = {
      generateTraceId: () => pinned.traceId ?? random.generateTraceId(),
      generateSpanId: () => pinned.spanId ?? random.generateSpanId(),
    };
    provider = new TracerProvider({ idGenerator, spanProcessors: [new SimpleSpanProcessor({ exporter })] });
    trace.setGlobalTracerProvider(provider);
  });
  beforeEach(() => {
    exporter.reset();
    tracingState.on = true;
  });
  afterAll(() => {
    tracingState.on = false;
    trace.disable();
  });

  it('with tracing off, a segment end reads nothing and records nothing', async () => {
    tracingState.on = false;
    const r = run({});
    await endSegment('run_1', 'completed', r);
    expect(r.reads).toBe(0);
    expect(await finished()).toEqual([]);
  });

  it("the root: the stored ids, from the run's creation to the end, with the final attributes; once, however often the end is told", async () => {
    const r = run({});
    await endSegment('run_1', 'completed', r, undefined, () => 5000);
    await endSegment('run_1', 'completed', r, undefined, () => 6000);
    const [span, ...more] = await finished();
    expect(more).toEqual([]);
    expect(span!.spanContext()).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
    });
    expect(span!.parentSpanContext).toBeUndefined();
    expect([span!.startTime, span!.endTime]).toEqual([
      [1, 0],
      [5, 0],
    ]);
    expect(span!.links).toEqual([]);
    expect(span!.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4o-mini',
      'gen_ai.conversation.id': 'run_1',
      'agentloop.tenant.id': 't1',
      'agentloop.run.status': 'completed',
      'gen_ai.response.finish_reasons': ['final_answer'],
      'gen_ai.usage.input_tokens': 120,
      'gen_ai.usage.output_tokens': 30,
    });
  });

  it('a resumed segment: its stored ids and start, linked to the root; a failed end has error status', async () => {
    const seg = resumeSegment(ROOT, null, 1, 2000)!;
    expect(seg.fresh).toBe(true);
    expect(parseTraceparent(seg.traceparent)).toMatchObject({
      traceId: '0af7651916cd43dd8448eb211c80319c',
      traceFlags: 1,
    });
    expect(resumeSegment(ROOT, seg.seg, 1, 9000)).toEqual({ ...seg, fresh: false }); // published again: the same segment
    expect(resumeSegment(ROOT, seg.seg, 3)!.traceparent).not.toBe(seg.traceparent); // a later resume: a new one
    expect(resumeSegment(undefined, null, 1)).toBeNull(); // created with tracing off
    // a job published without a trace (a reconciler's) joins the current segment, else the root
    expect([
      currentSegmentTp({ tp: ROOT, seg: seg.seg }),
      currentSegmentTp({ tp: ROOT, seg: null }),
      currentSegmentTp(null),
    ]).toEqual([seg.traceparent, ROOT, undefined]);
    const r = run({
      seg: seg.seg,
      status: 'failed',
      stopReason: null,
      error: JSON.stringify({ code: 'provider_error', message: 'down' }),
    });
    await endSegment('run_1', 'failed', r, undefined, () => 7000);
    const [span] = await finished();
    expect(formatTraceparent(span!.spanContext())).toBe(seg.traceparent);
    expect([span!.startTime, span!.endTime]).toEqual([
      [2, 0],
      [7, 0],
    ]);
    expect(span!.links).toMatchObject([
      { context: parseTraceparent(ROOT)!, attributes: { 'agentloop.link': 'run_root' } },
    ]);
    expect(span!.status).toEqual({ code: 2, message: 'provider_error: down' });
    expect(span!.attributes).toMatchObject({
      'agentloop.resumed': true,
      'agentloop.run.status': 'failed',
      'gen_ai.response.finish_reasons': ['failed'],
      'error.type': 'provider_error',
    });
  });

  it('a run ended while parked: its segment was recorded at the park; a closing span of no length says how it ended', async () => {
    const r = run({ status: 'paused', stopReason: null });
    await endSegment('run_1', 'paused', r, 1, () => 3000);
    r.st.status = 'cancelled';
    r.st.stopReason = 'cancelled';
    await endSegment('run_1', 'cancelled', r, undefined, () => 8000);
    await endSegment('run_1', 'cancelled', r, undefined, () => 9000); // told again: nothing more
    const [root, closing, ...more] = await finished();
    expect(more).toEqual([]);
    expect(root!.spanContext().spanId).toBe('b7ad6b7169203331');
    expect(root!.attributes['agentloop.run.status']).toBe('paused');
    expect(closing!.spanContext().spanId).not.toBe('b7ad6b7169203331');
    expect(closing!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect([closing!.startTime, closing!.endTime]).toEqual([
      [8, 0],
      [8, 0],
    ]);
    expect(closing!.links).toMatchObject([
      { context: parseTraceparent(ROOT), attributes: { 'agentloop.link': 'run_root' } },
    ]);
    expect(closing!.attributes).toMatchObject({
      'agentloop.run.status': 'cancelled',
      'agentloop.ended_parked': true,
      'gen_ai.response.finish_reasons': ['cancelled'],
    });
  });

  it("a park read after the run resumed, before the resume stored its segment, is still the parked segment's", async () => {
    const earlier = resumeSegment(ROOT, null, 1, 2000)!;
    await endSegment('run_1', 'paused', run({ status: 'running', seg: earlier.seg }), 3, () => 4000);
    const [span, ...more] = await finished();
    expect(more).toEqual([]);
    expect(formatTraceparent(span!.spanContext())).toBe(earlier.traceparent);
    expect(span!.attributes['agentloop.run.status']).toBe('paused');
  });

  it('records nothing for a run that moved on before the read, has no root, or a malformed segment', async () => {
    const next = resumeSegment(ROOT, null, 3)!.seg;
    await endSegment('run_1', 'paused', run({ status: 'running', seg: next }), 3); // resumed meanwhile, its segment stored: not given its ids
    await endSegment('run_1', 'completed', run({ status: 'running' })); // moved on otherwise
    await endSegment('run_1', 'completed', run({ tp: null }));
    await endSegment('run_1', 'completed', { read: async () => null, claim: async () => true });
    await endSegment('run_1', 'completed', {
      read: async () => Promise.reject(new Error('redis down')),
      claim: async () => true,
    }); // never thrown
    expect(await finished()).toEqual([]);
    expect(parseSegment('1|garbage|5')).toBeNull();
    expect(parseSegment(`x|${ROOT}|5`)).toBeNull();
  });
});
