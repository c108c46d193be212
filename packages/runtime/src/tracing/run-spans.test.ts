import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import { LlmError } from '@agentloop/llm';
import { endChatSpan, endToolSpan, startChatSpan, startToolSpan } from './run-spans.js';
import { withTraceparent } from './traceparent.js';
import { tracingState } from './tracing-state.js';

const ROOT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const SECRET = 'HTTP 404: {"customer":"Jane Doe, SSN 123-45-6789"}';
const exporter = new InMemorySpanExporter();
const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
const run = {
  id: 'r1',
  tenant: 't',
  request: { model: { provider: 'openai' as const, name: 'gpt-4o-mini', params: {} } },
};

function failBoth(): void {
  withTraceparent(ROOT, () => {
    const tool = startToolSpan(
      { runId: 'r1', tenantId: 't', callId: 'c1', name: 'crm__getCustomer', arguments: '{"id":"42"}' },
      'default',
    );
    endToolSpan(tool, { status: 'error', content: SECRET, error: { code: 'tool_error', message: SECRET } });
    const chat = startChatSpan(run, 0, () => []);
    endChatSpan(chat, { error: new LlmError('invalid_request', `400: your prompt "${SECRET}" is too long`) });
  });
}

describe('failed spans (SPEC §8): an error message is content', () => {
  beforeAll(() => {
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    trace.setGlobalTracerProvider(provider);
    tracingState.on = true;
  });
  afterEach(() => exporter.reset());
  afterAll(async () => {
    tracingState.on = false;
    tracingState.captureContent = false;
    await provider.shutdown();
    trace.disable();
    context.disable();
  });

  it('with capture off a failed span says the error code only, never the message', () => {
    tracingState.captureContent = false;
    failBoth();
    const spans = exporter.getFinishedSpans();
    expect(spans.map((s) => s.name)).toEqual(['execute_tool crm__getCustomer', 'chat gpt-4o-mini']);
    const [tool, chat] = spans;
    expect(tool!.status).toEqual({ code: 2, message: 'tool_error' });
    expect(chat!.status).toEqual({ code: 2, message: 'invalid_request' });
    expect(chat!.attributes['error.type']).toBe('LlmError');
    expect(JSON.stringify(spans.map((s) => [s.status, s.attributes, s.events]))).not.toContain('Jane Doe');
  });

  it('with capture on the status carries the message', () => {
    tracingState.captureContent = true;
    failBoth();
    const [tool, chat] = exporter.getFinishedSpans();
    expect(tool!.status.message).toBe(`tool_error: ${SECRET}`);
    expect(tool!.attributes['gen_ai.tool.call.result']).toBe(SECRET);
    expect(chat!.status.message).toContain('Jane Doe');
  });
});
