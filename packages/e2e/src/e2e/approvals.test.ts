import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { QUEUES, advanceJobId } from '@agentloop/protocol';
import { stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  mixed: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'lookup', args: { key: 'auto' } },
            { name: 'send_email', args: { to: 'model@example.com', body: 'hi' } },
            { name: 'pick_file', args: { hint: 'report' } },
          ],
        }
      : { text: `results: ${stepResults(req, 0).join(' | ')}` },
  email: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
      : { text: `after: ${stepResults(req, 0)[0]}` },
  // call ids a provider may send that name Object.prototype members: an edit of one call must not touch the others
  protoIds: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: ['call_a', 'constructor', '__proto__', 'toString'].map((id, i) => ({
            id,
            name: 'send_email',
            args: { to: `n${i}@example.com` },
          })),
        }
      : { text: `results: ${stepResults(req, 0).length}` },
  wipe: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'wipe_disk', args: { disk: 'sda' } }] }
      : { text: `after: ${stepResults(req, 0)[0]}` },
};
const body = (scenario: string, extra: Record<string, unknown> = {}) => ({
  input: `[${scenario}] please`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['lookup', 'send_email', 'wipe_disk'],
  clientTools: [
    {
      name: 'pick_file',
      description: 'Let the user pick a file',
      parameters: { type: 'object', properties: { hint: { type: 'string' } } },
    },
  ],
  ...extra,
});

describe('human in the loop: parking and decisions (SPEC §5)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: byScenario(scenarios, 'email') });
  });
  afterAll(async () => {
    await s?.stop();
  });
  const decide = (id: string, decisions: unknown[]) => s.a.request('POST', `/v1/runs/${id}/decisions`, { decisions });
  const finished = (id: string) => finishedRun(s.a, id);

  it('an edit applies to its own call only, whatever the other calls’ ids (constructor, __proto__, toString)', async () => {
    const id = await s.a.startRun(body('protoIds'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const ids = paused.pending.map((p) => p.callId);
    expect(ids).toEqual(['call_a', 'constructor', '__proto__', 'toString']);
    const edited = (to: string) => ({ to, body: 'edited' });
    const r = await decide(id, [
      { callId: 'call_a', action: 'approve', arguments: edited('a@example.com') },
      { callId: '__proto__', action: 'approve', arguments: edited('p@example.com') },
      { callId: 'constructor', action: 'approve' },
      { callId: 'toString', action: 'deny' },
    ]);
    expect(r.status, r.text).toBe(202);
    const { snap, messages } = await finished(id);
    expect(snap.status).toBe('completed');
    const calls = messages.find((m) => m.role === 'assistant' && m.toolCalls?.length)!.toolCalls!;
    expect(calls.map((c) => [c.id, JSON.parse(c.arguments)])).toEqual([
      ['call_a', edited('a@example.com')],
      ['constructor', { to: 'n1@example.com' }],
      ['__proto__', edited('p@example.com')],
      ['toString', { to: 'n3@example.com' }],
    ]);
  });

  it('runs the auto call at once, parks for the rest, and resumes with edited arguments after two requests', async () => {
    const id = await s.a.startRun(body('mixed'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending.map((p) => [p.name, p.pauseType])).toEqual([
      ['send_email', 'awaiting_approval'],
      ['pick_file', 'requires_client_execution'],
    ]);
    expect(paused.pending[0]!.arguments).toEqual({ to: 'model@example.com', body: 'hi' });
    const [email, pick] = paused.pending;
    // the auto call runs while the run is parked
    await s.a.waitFor(id, () => true);
    const evs = async () => (await s.a.events(id, { timeoutMs: 400 })).events;
    for (
      let i = 0;
      i < 100 &&
      !(await evs()).some((e) => e.type === 'tool.call' && e.data.name === 'lookup' && e.data.status === 'completed');
      i++
    )
      await new Promise((r) => setTimeout(r, 20));
    const listed = await s.a.request('GET', '/v1/runs?status=paused');
    expect(listed.json.data.map((r: { id: string }) => r.id)).toContain(id);
    // an invalid edit is a 400 and changes nothing
    const bad = await decide(id, [{ callId: email!.callId, action: 'approve', arguments: { to: 'not-an-address' } }]);
    expect(bad.status).toBe(400);
    expect(bad.json.error.details).toBeDefined();
    const first = await decide(id, [
      { callId: email!.callId, action: 'approve', arguments: { to: 'ops@example.com', body: 'edited' } },
    ]);
    expect(first.status).toBe(202);
    expect(first.json).toEqual({ status: 'waiting', remaining: [pick!.callId] });
    expect((await decide(id, [{ callId: email!.callId, action: 'approve' }])).status).toBe(409); // already decided
    expect((await decide(id, [{ callId: pick!.callId, action: 'approve' }])).status).toBe(400); // client tools take a result
    const second = await decide(id, [
      { callId: pick!.callId, action: 'submit_result', result: { path: '/tmp/report.pdf' } },
    ]);
    expect(second.json).toEqual({ status: 'resumed', remaining: [] });
    const { snap, messages, events } = await finished(id);
    expect(snap.status).toBe('completed');
    const seqOf = (pred: (e: (typeof events)[number]) => boolean) => events.find(pred)!.seq;
    expect(
      seqOf((e) => e.type === 'tool.call' && e.data.name === 'lookup' && e.data.status === 'completed'),
    ).toBeLessThan(seqOf((e) => e.type === 'tool.call' && e.data.status === 'approved'));
    const approved = events.find((e) => e.type === 'tool.call' && e.data.status === 'approved')!;
    expect(approved.data).toMatchObject({
      arguments: { to: 'ops@example.com', body: 'edited' },
      originalArguments: { to: 'model@example.com', body: 'hi' },
    });
    expect(
      s
        .effects()
        .filter((e) => e.tool === 'send_email' && String(e.key).startsWith(`${id}:`))
        .map((e) => e.to),
    ).toEqual(['ops@example.com']);
    const assistant = messages.find((m) => m.toolCalls?.length === 3)!;
    expect(JSON.parse(assistant.toolCalls![1]!.arguments)).toEqual({ to: 'ops@example.com', body: 'edited' });
    const results = messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.toolCallId)).toEqual(assistant.toolCalls!.map((c) => c.id));
    expect(snap.output).toBe(`results: ${results.map((m) => m.content).join(' | ')}`);
    expect(JSON.parse(results[2]!.content!)).toEqual({ path: '/tmp/report.pdf' });
    const resumed = events.filter((e) => e.type === 'run.resumed');
    expect(resumed).toHaveLength(1);
    expect(resumed[0]!.data.decisions).toEqual([
      { callId: email!.callId, action: 'approve' },
      { callId: pick!.callId, action: 'submit_result' },
    ]);
  });

  it('resumes once and executes once under 30 concurrent identical approvals', async () => {
    const id = await s.a.startRun(body('email'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const callId = paused.pending[0]!.callId;
    const results = await Promise.all(Array.from({ length: 30 }, () => decide(id, [{ callId, action: 'approve' }])));
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    expect(results.filter((r) => r.status === 409)).toHaveLength(29);
    const { events } = await finished(id);
    expect(events.filter((e) => e.type === 'run.resumed')).toHaveLength(1);
    expect(s.effects().filter((e) => e.tool === 'send_email' && String(e.key).startsWith(`${id}:`))).toHaveLength(1);
  });

  it('gives the model the denial with its reason', async () => {
    const id = await s.a.startRun(body('email'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    await decide(id, [{ callId: paused.pending[0]!.callId, action: 'deny', reason: 'not today' }]);
    const { snap } = await finished(id);
    expect(JSON.parse(snap.output!.replace('after: ', '')).error.message).toBe(
      'Tool execution denied by user. Reason: not today',
    );
  });

  it('still pauses a critical tool listed in autoApprove', async () => {
    const id = await s.a.startRun(body('wipe', { approval: { autoApprove: ['wipe_disk', 'send_email'] } }));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending[0]).toMatchObject({ name: 'wipe_disk', pauseType: 'awaiting_approval' });
    await s.a.cancel(id);
  });

  it('expires with onTimeout deny: undecided calls are denied and the run resumes', async () => {
    const id = await s.a.startRun(body('email', { approval: { timeoutMs: 1000, onTimeout: 'deny' } }));
    // the pause is short: the run's event log, read after it ended, shows it (a poll of the status may miss it)
    const { snap, events } = await finished(id);
    expect(snap.status).toBe('completed');
    expect(snap.output).toContain('denied');
    const paused = events.find((e) => e.type === 'run.paused');
    expect(paused?.data.pending).toEqual([
      expect.objectContaining({ name: 'send_email', pauseType: 'awaiting_approval' }),
    ]);
    const callId = (paused!.data.pending as Array<{ callId: string }>)[0]!.callId;
    expect(events.find((e) => e.type === 'run.resumed')!.data.decisions).toEqual([{ callId, action: 'deny' }]);
    expect(Date.parse(String(paused!.data.expiresAt))).toBeGreaterThan(Date.parse(paused!.at));
    expect((await decide(id, [{ callId: 'x', action: 'approve' }])).status).toBe(409);
  });

  it('expires with onTimeout fail: the run fails approval_expired', async () => {
    const id = await s.a.startRun(body('email', { approval: { timeoutMs: 1000, onTimeout: 'fail' } }));
    // the pause is short: the run's event log, read after it ended, shows it (a poll of the status may miss it)
    const { snap, events } = await finished(id);
    expect(snap).toMatchObject({ status: 'failed', error: { code: 'approval_expired' } });
    const awaiting = events.filter((e) => e.type === 'tool.call' && e.data.status === 'awaiting_approval');
    expect(awaiting.map((e) => e.data.name)).toEqual(['send_email']);
    expect(events.find((e) => e.type === 'run.paused')?.data.pending).toEqual([
      expect.objectContaining({ callId: awaiting[0]!.data.callId }),
    ]);
    expect((await decide(id, [{ callId: String(awaiting[0]!.data.callId), action: 'approve' }])).status).toBe(409);
  });

  it('cancels while paused: every pending call gets a cancelled result', async () => {
    const id = await s.a.startRun(body('email'));
    await s.a.waitFor(id, (r) => r.status === 'paused');
    expect((await s.a.cancel(id)).status).toBe(202);
    const { snap, messages } = await finished(id);
    expect(snap.status).toBe('cancelled');
    expect(JSON.parse(messages.at(-1)!.content!).error.code).toBe('cancelled');
  });

  it('accepts decisions from the decisions queue through the same path', async () => {
    const id = await s.a.startRun(body('email'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const { Queue } = await import('bullmq');
    const q = new Queue('decisions', { connection: s.redis, prefix: s.keyPrefix });
    await q.add('decide', {
      tenantId: 'tenant-a',
      runId: id,
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    const { snap } = await finished(id);
    expect(snap.status).toBe('completed');
    expect(snap.output).toContain('sent');
    await q.close();
  });

  it('a resume job whose plan went stale reads the state and decides as usual (and still starts exactly once)', async () => {
    const id = await s.a.startRun(body('email'));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    // take the resume job's id first, with a plan that no longer matches the run (a pendingFinal it does not have);
    // carried out, it would make a final call without tools (stopReason max_iterations)
    const queue = new Queue(QUEUES.orchestrator, { connection: s.redis, prefix: s.keyPrefix });
    // delayed until the decision is in (its own resume job, the same id, is then a no-op): the stale job runs after it
    const stale = await queue.add(
      'advance',
      {
        runId: id,
        iteration: paused.iteration + 1,
        plan: { callMode: 'max_iterations', pendingFinal: 'loop_detected', iterUsage: {} },
      },
      { jobId: advanceJobId(id, paused.iteration + 1, 'resume'), delay: 600_000 },
    );
    expect(
      (await decide(id, [{ callId: paused.pending[0]!.callId, action: 'deny', reason: 'stale plan test' }])).status,
    ).toBe(202);
    await stale.promote();
    const { snap, events } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', iteration: 2, stopReason: 'final_answer' });
    expect(snap.output).toContain('Tool execution denied by user. Reason: stale plan test');
    expect(events.filter((e) => e.type === 'iteration.started' && e.data.iteration === 2)).toHaveLength(1);
    await queue.close();
  });

  it('exposes the parked gauge and the pause counter', async () => {
    const id = await s.a.startRun(body('email'));
    await s.a.waitFor(id, (r) => r.status === 'paused');
    const metrics = (await s.anon.request('GET', '/metrics')).text;
    expect(metrics).toMatch(/agentloop_runs_parked [1-9]/);
    expect(metrics).toMatch(/agentloop_runs_paused_total\{pause_type="awaiting_approval"\} [1-9]/);
    await s.a.cancel(id);
    await s.a.waitTerminal(id);
  });
});
