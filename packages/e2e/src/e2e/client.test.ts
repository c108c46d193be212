import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueueEvents } from 'bullmq';
import { AgentloopClient, AgentloopError } from '@agentloop/client';
import { enqueueRun } from '@agentloop/client/queue';
import { QUEUES, type EventEnvelope, type RunSnapshot } from '@agentloop/protocol';
import { stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { blockingConnection, byScenario } from '../test-support/helpers.js';

const answerWithResults = (req: MockRequest): ReplySpec => ({ text: stepResults(req, 0).join(' / ') });
const script = byScenario(
  {
    calc: (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] } : { text: 'it is 42' },
    mails: (req) =>
      stepOf(req) === 0
        ? {
            toolCalls: [
              { name: 'send_email', args: { to: 'a@b.c' } },
              { name: 'send_email', args: { to: 'd@e.f' } },
            ],
          }
        : answerWithResults(req),
    client: (req) => (stepOf(req) === 0 ? { toolCalls: [{ name: 'pick_file', args: {} }] } : answerWithResults(req)),
    quick: () => ({ text: 'done' }),
  },
  'calc',
);
const model = { provider: 'openai' as const, name: 'gpt-4o-mini', api: 'chat' as const };
const failure = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as AgentloopError,
  );

/** @agentloop/client, the one typed client of the API (and of queue intake), against a real stack. */
describe('@agentloop/client against a real api', () => {
  let s: InProcessStack;
  let client: AgentloopClient;
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    client = new AgentloopClient({ baseUrl: s.a.baseUrl, apiKey: 'key-a' });
  }, 30_000);
  afterAll(() => s?.stop());

  it('creates a run (once per Idempotency-Key), follows its events to the terminal one, waits for it and reads its transcript', async () => {
    const request = { input: '[calc] what is 6*7?', model, tools: ['calculator'] };
    const run = await client.runs.create(request, { idempotencyKey: 'client-1' });
    expect(run).toEqual({ id: run.id, status: 'queued', eventsUrl: `/v1/runs/${run.id}/events` });
    const events: EventEnvelope[] = [];
    for await (const e of client.runs.events(run.id)) events.push(e);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events[0]!.type).toBe('run.queued');
    expect(events.at(-1)).toMatchObject({ type: 'run.completed', data: { output: 'it is 42' } });
    expect(await client.runs.wait(run.id)).toMatchObject({ id: run.id, status: 'completed', output: 'it is 42' });
    const snap = await client.runs.get(run.id, { include: ['messages', 'history'] });
    expect(snap.messages!.some((m) => m.role === 'tool' && m.content?.includes('42'))).toBe(true);
    expect(snap.history!.length).toBeGreaterThanOrEqual(snap.messages!.length);
    // from the middle: only what came after; at the terminal event: nothing (204)
    expect((await collect(client.runs.events(run.id, { after: 2 }))).map((e) => e.seq)[0]).toBe(3);
    expect(await collect(client.runs.events(run.id, { after: events.length }))).toEqual([]);
    expect(await client.runs.create(request, { idempotencyKey: 'client-1' })).toEqual({ ...run, status: 'completed' });
    expect(
      await failure(client.runs.create({ ...request, input: 'other' }, { idempotencyKey: 'client-1' })),
    ).toMatchObject({ status: 422, code: 'idempotency_mismatch' });
  });

  it('waits for a run that is still going, and follows it live', async () => {
    const { id } = await client.runs.create({ input: '[calc] again', model, tools: ['calculator'] });
    const done = await client.runs.wait(id);
    expect(done).toMatchObject({ status: 'completed', output: 'it is 42', iteration: 2 });
  });

  it('approves one paused call with edited arguments and denies the other, then cancels a paused run (409 once it ended)', async () => {
    const { id } = await client.runs.create({ input: '[mails] two mails', model, tools: ['send_email'] });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const [one, two] = paused.pending;
    expect(await failure(client.runs.approve(id, one!.callId, { arguments: { to: 'not an address' } }))).toMatchObject({
      status: 400,
      code: 'invalid_request',
    });
    expect(await client.runs.approve(id, one!.callId, { arguments: { to: 'x@y.z' } })).toEqual({
      status: 'waiting',
      remaining: [two!.callId],
    });
    expect(await client.runs.deny(id, two!.callId, { reason: 'spam' })).toEqual({ status: 'resumed', remaining: [] });
    expect(await failure(client.runs.deny(id, two!.callId))).toMatchObject({ status: 409, code: 'conflict' });
    const done = await client.runs.wait(id);
    expect(done.output).toContain('"sent":true');
    expect(done.output).toContain('Reason: spam');
    expect(
      s
        .effects()
        .filter((e) => e.tool === 'send_email')
        .map((e) => e.to),
    ).toEqual(['x@y.z']);

    const other = await client.runs.create({ input: '[mails] never sent', model, tools: ['send_email'] });
    await s.a.waitFor(other.id, (r) => r.status === 'paused');
    expect(await client.runs.cancel(other.id)).toEqual({ id: other.id, status: 'cancelled' });
    expect((await client.runs.wait(other.id)).status).toBe('cancelled');
    expect(await failure(client.runs.cancel(other.id))).toMatchObject({
      status: 409,
      code: 'conflict',
      retryable: false,
    });
  });

  it('submits the result of a client tool', async () => {
    const { id } = await client.runs.create({
      input: '[client] pick one',
      model,
      clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
    });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending[0]).toMatchObject({ name: 'pick_file', pauseType: 'requires_client_execution' });
    expect(await client.runs.submitResult(id, paused.pending[0]!.callId, { path: '/tmp/a.txt' })).toEqual({
      status: 'resumed',
      remaining: [],
    });
    expect((await client.runs.wait(id)).output).toContain('/tmp/a.txt');
  });

  it("lists a tenant's runs newest first across pages, following nextCursor, each run once", async () => {
    const b = new AgentloopClient({ baseUrl: s.a.baseUrl, apiKey: 'key-b' });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await b.runs.create({ input: `[quick] run ${i}`, model })).id);
    await Promise.all(ids.map((id) => b.runs.wait(id)));
    const pages: RunSnapshot[][] = [];
    for await (const page of b.runs.list({ limit: 2 })) pages.push(page.data);
    expect(pages.map((p) => p.length)).toEqual([2, 2, 1]);
    expect(pages.flat().map((r) => r.id)).toEqual([...ids].reverse());
    const completed: string[] = [];
    for await (const page of b.runs.list({ status: 'completed', limit: 3 }))
      completed.push(...page.data.map((r) => r.id));
    expect(completed).toHaveLength(5);
    for await (const page of b.runs.list({ status: 'paused' })) expect(page).toEqual({ data: [], nextCursor: null });
  });

  it('reads the tool catalog', async () => {
    const tools = await client.tools.list();
    expect(tools.find((t) => t.name === 'calculator')).toMatchObject({
      sideEffect: 'read',
      pool: 'default',
      parameters: { type: 'object' },
    });
    expect(tools.find((t) => t.name === 'send_email')).toMatchObject({ sideEffect: 'external' });
  });

  it('throws the API error as an AgentloopError with its code, status and details; unknown threads and runs are 404', async () => {
    expect(await failure(client.runs.get('run_nope'))).toMatchObject({ status: 404, code: 'not_found' });
    const bad = await failure(client.runs.create({ input: '', model }));
    expect(bad).toMatchObject({ status: 400, code: 'invalid_request' });
    expect(bad!.details).toEqual(expect.arrayContaining([expect.objectContaining({ path: ['input'] })]));
    expect(await failure(new AgentloopClient({ baseUrl: s.a.baseUrl, apiKey: 'wrong' }).tools.list())).toMatchObject({
      status: 401,
      code: 'unauthorized',
    });
    expect(await failure(client.threads.get('no-such-thread'))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await failure(client.runs.webhooks('run_nope'))).toMatchObject({ status: 404, code: 'not_found' });
    expect(await failure(collect(client.runs.events('run_nope')))).toMatchObject({ status: 404, code: 'not_found' });
    // another tenant's run is not found either
    const { id } = await client.runs.create({ input: '[quick] mine', model });
    expect(await failure(new AgentloopClient({ baseUrl: s.a.baseUrl, apiKey: 'key-b' }).runs.get(id))).toMatchObject({
      status: 404,
      code: 'not_found',
    });
  });

  it("enqueues a run on the requests queue with the backend's own connection (@agentloop/client/queue)", async () => {
    const connection = blockingConnection(s.redis);
    const events = new QueueEvents(QUEUES.requests, { connection, prefix: s.keyPrefix });
    await events.waitUntilReady();
    try {
      // the plain AGENTLOOP_PREFIX, as set: on a cluster the helper hash-tags it as the deployment does
      const job = await enqueueRun(
        { input: '[calc] queued', model, tools: ['calculator'] },
        { connection: s.redis, prefix: s.prefix, tenantId: 'tenant-a', runId: 'client-queued-1' },
      );
      expect(await job.waitUntilFinished(events, 15_000)).toEqual({ id: 'client-queued-1' });
      const again = await enqueueRun(
        { input: '[calc] queued', model, tools: ['calculator'] },
        { connection: s.redis, prefix: s.keyPrefix, tenantId: 'tenant-a', idempotencyKey: 'queue-key' },
      );
      const same = await enqueueRun(
        { input: '[calc] queued', model, tools: ['calculator'] },
        { connection: s.redis, prefix: s.keyPrefix, tenantId: 'tenant-a', idempotencyKey: 'queue-key' },
      );
      expect(same.id).toBe(again.id);
      expect(await again.waitUntilFinished(events, 15_000)).toEqual({ id: expect.any(String) });
    } finally {
      await events.close();
      connection.disconnect();
    }
    expect((await client.runs.wait('client-queued-1')).output).toBe('it is 42');
  });
});

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}
