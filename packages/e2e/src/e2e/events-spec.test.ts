import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EventEnvelope } from '@agentloop/protocol';
import type { MockRequest, ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const hasToolResult = (req: MockRequest) => req.messages.some((m) => m.role === 'tool');
const script = byScenario(
  {
    mixed: (req): ReplySpec =>
      hasToolResult(req)
        ? { text: 'all done' }
        : {
            toolCalls: [
              { name: 'calculator', args: { expression: '1+1' } },
              { name: 'send_email', args: { to: 'a@b.c', body: 'x' } },
              { name: 'send_email', args: { to: 'd@e.f', body: 'y' } },
              { name: 'pick_file', args: {} },
            ],
          },
    park: (req): ReplySpec =>
      hasToolResult(req) ? { text: 'sent' } : { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c', body: 'x' } }] },
    broken: (req): ReplySpec =>
      hasToolResult(req)
        ? { error: { status: 400, message: 'bad request from the provider' } }
        : { toolCalls: [{ name: 'calculator', args: { expression: '2*3' } }] },
  },
  'mixed',
);
const body = (scenario: string) => ({
  input: `[${scenario}] go`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['calculator', 'send_email'],
  clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
});
const statuses = (events: EventEnvelope[], callId: string) =>
  events.filter((e) => e.type === 'tool.call' && e.data.callId === callId).map((e) => e.data.status);

/** SPEC §4: every status of a call's life is an event, and every iteration that started is completed. */
describe('events follow SPEC §4', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
  }, 30_000);
  afterAll(() => s?.stop());

  it('reports running, the pause statuses, approved, denied and submitted calls, and counts them', async () => {
    const id = await s.a.startRun(body('mixed'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const [a, b, c] = paused.pending.map((p) => p.callId);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [
        { callId: a, action: 'approve' },
        { callId: b, action: 'deny', reason: 'no' },
        { callId: c, action: 'submit_result', result: { path: '/x' } },
      ],
    });
    expect(r.status).toBe(202);
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    const calls = events
      .filter((e) => e.type === 'tool.call' && e.data.status === 'proposed')
      .map((e) => e.data.callId as string);
    expect(statuses(events, calls[0]!)).toEqual(['proposed', 'running', 'completed']);
    expect(statuses(events, a!)).toEqual(['proposed', 'awaiting_approval', 'approved', 'running', 'completed']);
    expect(statuses(events, b!)).toEqual(['proposed', 'awaiting_approval', 'denied']);
    expect(statuses(events, c!)).toEqual(['proposed', 'requires_client_execution', 'completed']);
    const metrics = (await s.a.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_tool_calls_total\{tool="send_email",status="denied"\} [1-9]/);
    expect(metrics).toMatch(/agentloop_tool_calls_total\{tool="unknown",status="completed"\} [1-9]/); // the client tool
  });

  it('a run cancelled while paused completes its iteration first and counts its cancelled call', async () => {
    const id = await s.a.startRun(body('park'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect((await s.a.cancel(id)).status).toBe(202);
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('cancelled');
    expect(statuses(events, paused.pending[0]!.callId)).toEqual(['proposed', 'awaiting_approval', 'cancelled']);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['iteration.completed', 'run.cancelled']);
    expect(events.filter((e) => e.type === 'iteration.completed').map((e) => e.data.iteration)).toEqual([1]);
    expect((await s.a.request('GET', '/metrics')).text).toMatch(
      /agentloop_tool_calls_total\{tool="send_email",status="cancelled"\} [1-9]/,
    );
  });

  it('a run that fails in its second iteration completes that iteration before run.failed', async () => {
    const id = await s.a.startRun(body('broken'));
    const { snap, events } = await finishedRun(s.a, id);
    expect(snap.status).toBe('failed');
    expect(events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2]);
    expect(events.filter((e) => e.type === 'iteration.completed').map((e) => e.data.iteration)).toEqual([1, 2]);
    expect(events.slice(-2).map((e) => e.type)).toEqual(['iteration.completed', 'run.failed']);
  });
});
