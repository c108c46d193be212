import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueEvents } from 'bullmq';
import { AgentloopClient, AgentloopError, enqueueRun } from '@agentloop/client';
import { QUEUES } from '@agentloop/protocol';
import { stepOf, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

const script = (req: MockRequest): ReplySpec =>
  /approve me/.test(req.messages.find((m) => m.role === 'user')?.content ?? '')
    ? stepOf(req) === 0 ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] } : { text: 'sent it' }
    : stepOf(req) === 0 ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] } : { text: 'it is 42' };

/** @agentloop/client, the one typed client of the API (and of queue intake), against a real stack. */
describe('@agentloop/client', () => {
  let s: InProcessStack;
  let client: AgentloopClient;
  const model = { provider: 'openai' as const, name: 'gpt-4o-mini', api: 'chat' as const };
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    client = new AgentloopClient(s.a.baseUrl, 'key-a');
  }, 30_000);
  afterAll(() => s?.stop());

  it('creates a run, follows its events to the terminal one, and reads its snapshot', async () => {
    const run = await client.createRun({ input: 'what is 6*7?', model, tools: ['calculator'] }, { idempotencyKey: 'client-1' });
    expect(run.status).toBe('queued');
    const types: string[] = [];
    for await (const e of client.events(run.id)) types.push(e.type);
    expect(types[0]).toBe('run.queued');
    expect(types.at(-1)).toBe('run.completed');
    expect(types.filter((t) => t === 'iteration.started')).toHaveLength(2);
    const snap = await client.getRun(run.id, 'messages');
    expect(snap.output).toBe('it is 42');
    expect(snap.messages!.some((m) => m.role === 'tool' && m.content?.includes('42'))).toBe(true);
    // resuming after the terminal event: nothing more (204)
    const after: string[] = [];
    for await (const e of client.events(run.id, { after: types.length })) after.push(e.type);
    expect(after).toEqual([]);
    expect((await client.createRun({ input: 'what is 6*7?', model, tools: ['calculator'] }, { idempotencyKey: 'client-1' })).id).toBe(run.id);
  });

  it('lists paused runs and decides their calls', async () => {
    const run = await client.createRun({ input: 'approve me', model, tools: ['send_email'] });
    await s.a.waitFor(run.id, (r) => r.status === 'paused');
    const listed = await client.listRuns({ status: 'paused', limit: 10 });
    const mine = listed.data.find((r) => r.id === run.id)!;
    expect(mine.pending.map((p) => p.name)).toEqual(['send_email']);
    expect(await client.decide(run.id, [{ callId: mine.pending[0]!.callId, action: 'approve' }])).toEqual({ status: 'resumed', remaining: [] });
    expect((await s.a.waitTerminal(run.id)).output).toBe('sent it');
  });

  it('throws the API error as an AgentloopError with its code, status and details', async () => {
    const missing = await client.getRun('run_nope').catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(AgentloopError);
    expect(missing).toMatchObject({ status: 404, code: 'not_found' });
    const bad = await client.createRun({ input: '', model } as never).catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 400, code: 'invalid_request' });
    expect((bad as AgentloopError).details).toBeDefined();
    const other = await new AgentloopClient(s.a.baseUrl, 'wrong').tools().catch((e: unknown) => e);
    expect(other).toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('enqueues a run on the requests queue with the backend\'s own connection', async () => {
    const events = new QueueEvents(QUEUES.requests, { connection: s.redis.duplicate({ maxRetriesPerRequest: null }), prefix: s.prefix });
    await events.waitUntilReady();
    const job = await enqueueRun({ input: 'what is 6*7?', model, tools: ['calculator'] }, { connection: s.redis, prefix: s.prefix, tenantId: 'tenant-a', runId: 'client-queued-1' });
    try {
      expect(await job.waitUntilFinished(events, 15_000)).toEqual({ id: 'client-queued-1' });
    } finally {
      await events.close();
    }
    expect((await s.a.waitTerminal('client-queued-1')).output).toBe('it is 42');
  });
});
