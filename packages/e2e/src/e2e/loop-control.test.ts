import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stepOf, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun, until } from '../test-support/helpers.js';

/** Scripts are chosen per run by a marker in the user's input: one stack serves every scenario. */
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  forever: (req) =>
    req.tools.length
      ? { toolCalls: [{ name: 'lookup', args: { key: `k${stepOf(req)}` } }] }
      : { text: `final after ${stepOf(req)} steps` },
  loop: (req) =>
    req.tools.length ? { toolCalls: [{ name: 'lookup', args: { key: 'same' } }] } : { text: 'gave up looping' },
  errors: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'no_such_tool', args: {} },
            { name: 'lookup', arguments: '{not json' },
            { name: 'lookup', args: [1, 2] },
            { name: 'lookup', args: { key: 5 } },
            { name: 'fail', args: {} },
            { name: 'slow', args: {} },
            { name: 'big', args: { n: 200_000 } },
          ],
        }
      : { text: 'recovered' },
  parallel: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'lookup', args: { key: 'a' } },
            { name: 'lookup', args: { key: 'b' } },
            { name: 'lookup', args: { key: 'c' } },
          ],
        }
      : { text: 'ok' },
  // `effect` (not the builtin read tool `sleep`): its start is recorded, and logged, once it runs — a fact to wait for
  sleepy: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'effect', args: { ms: 20_000, label: 'sleepy' } },
            { name: 'lookup', args: { key: 'z' } },
          ],
        }
      : { text: 'should not get here' },
  slowstream: () => ({ text: 'x '.repeat(400), chunking: 'fine', delayMs: 30 }),
  external: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'send_email', args: { to: 'a@b.c' } },
            { name: 'lookup', args: { key: 'q' } },
          ],
        }
      : { text: 'ok' },
};

const body = (scenario: string, extra: Record<string, unknown> = {}) => ({
  input: `run the [${scenario}] scenario`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['lookup', 'fail', 'slow', 'big', 'sleep', 'send_email'],
  ...extra,
});

describe('loop control (SPEC §3)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: byScenario(scenarios, 'forever') });
  });
  afterAll(async () => {
    await s?.stop();
  });

  const finished = (id: string) => finishedRun(s.a, id);
  /** The run's events so far (the stream of a running run does not close: what came within the poll). */
  const eventsSoFar = async (id: string) => (await s.a.events(id, { maxEvents: 100, timeoutMs: 300 })).events;

  it('finalizes at maxIterations with one more call, tools withheld and a user-role instruction', async () => {
    const id = await s.a.startRun(body('forever', { limits: { maxIterations: 3 } }));
    const { snap, messages } = await finished(id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'max_iterations',
      iteration: 4,
      output: 'final after 3 steps',
    });
    const last = s.mock.requests.at(-1)!; // runs of this file go one at a time: the last request is this run's finalize call
    expect(last.tools).toEqual([]);
    expect(last.body.tools).toBeUndefined();
    expect(messages.at(-2)).toMatchObject({ role: 'user' });
    expect(messages.at(-2)!.content).toMatch(/maximum number of steps/);
  });

  it('fails at maxIterations with onMaxIterations "fail", making no further call', async () => {
    const before = s.mock.requests.length;
    const id = await s.a.startRun(body('forever', { limits: { maxIterations: 2, onMaxIterations: 'fail' } }));
    const { snap, events } = await finished(id);
    expect(snap).toMatchObject({
      status: 'failed',
      stopReason: 'max_iterations',
      iteration: 2,
      error: { code: 'max_iterations' },
    });
    expect(s.mock.requests.length - before).toBe(2);
    expect(events.at(-1)!.type).toBe('run.failed');
  });

  it('detects a loop: the repeated call is answered loop_detected, not executed, and the run finalizes', async () => {
    const id = await s.a.startRun(body('loop', { limits: { repeatLimit: 3 } }));
    const { snap, messages, events } = await finished(id);
    expect(snap).toMatchObject({
      status: 'completed',
      stopReason: 'loop_detected',
      output: 'gave up looping',
      iteration: 4,
    });
    const results = messages.filter((m) => m.role === 'tool').map((m) => m.content!);
    expect(results).toHaveLength(3);
    expect(JSON.parse(results[2]!)).toMatchObject({ ok: false, error: { code: 'loop_detected' } });
    expect(events.filter((e) => e.type === 'tool.call' && e.data.status === 'completed')).toHaveLength(2); // the third was never executed
  });

  it('answers every kind of bad call as a structured tool result the model recovers from', async () => {
    const id = await s.a.startRun(body('errors'));
    const { snap, messages } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', output: 'recovered' });
    const codes = messages
      .filter((m) => m.role === 'tool')
      .map((m) => {
        try {
          return JSON.parse(m.content!).error?.code ?? 'ok';
        } catch {
          return `text:${m.content!.length}`;
        }
      });
    expect(codes.slice(0, 6)).toEqual([
      'unknown_tool',
      'invalid_arguments',
      'invalid_arguments',
      'invalid_arguments',
      'tool_error',
      'timeout',
    ]);
    const big = messages.filter((m) => m.role === 'tool')[6]!.content!;
    expect(big.length).toBeLessThan(200_000);
    expect(big).toMatch(/characters \(about \d+ tokens\) cut from this tool result/);
    // the full result stays available in the call's record
    const bigCall = messages.find((m) => m.toolCalls?.length === 7)!.toolCalls![6]!;
    const record = await s.a.request('GET', `/v1/runs/${id}/calls/${bigCall.id}`);
    expect(record.json).toMatchObject({ name: 'big', status: 'completed', arguments: { n: 200_000 } });
    expect(record.json.result).toHaveLength(200_000);
    expect((await s.b.request('GET', `/v1/runs/${id}/calls/${bigCall.id}`)).status).toBe(404);
  });

  it('appends parallel results in the order the model listed the calls', async () => {
    const id = await s.a.startRun(body('parallel'));
    const { messages } = await finished(id);
    const assistant = messages.find((m) => m.toolCalls?.length === 3)!;
    const results = messages.filter((m) => m.role === 'tool');
    expect(results.map((m) => m.toolCallId)).toEqual(assistant.toolCalls!.map((c) => c.id));
    expect(results.map((m) => JSON.parse(m.content!).value)).toEqual(['A', 'B', 'C']);
  });

  it('stops at maxToolCalls: calls past the cap are skipped and the run finalizes budget_exceeded', async () => {
    const id = await s.a.startRun(body('parallel', { limits: { maxToolCalls: 2 } }));
    const { snap, messages } = await finished(id);
    expect(snap.stopReason).toBe('budget_exceeded');
    const results = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content!));
    expect(results[2]).toMatchObject({ ok: false, error: { code: 'skipped' } });
    expect(snap.usage.toolCalls).toBe(2);
  });

  it('stops at maxTotalTokens with budget_exceeded', async () => {
    const id = await s.a.startRun(body('forever', { limits: { maxTotalTokens: 50 } }));
    const { snap } = await finished(id);
    expect(snap).toMatchObject({ status: 'completed', stopReason: 'budget_exceeded', iteration: 2 });
  });

  it('cancels while a tool runs: the tool is aborted, every open call gets a cancelled result', async () => {
    const id = await s.a.startRun(body('sleepy', { tools: ['effect', 'lookup'] }));
    // the 20 s call is running when the cancel comes (its running event, and the tool itself started): it is
    // aborted, not skipped before it started
    await until('the long call to run', async () =>
      (await eventsSoFar(id)).some(
        (e) => e.type === 'tool.call' && e.data.name === 'effect' && e.data.status === 'running',
      ),
    );
    await until('the long call to start', () => s.effects().some((e) => e.label === 'sleepy' && e.phase === 'start'));
    const t0 = Date.now();
    expect((await s.a.cancel(id)).status).toBe(202);
    const { snap, messages, events } = await finished(id);
    expect(Date.now() - t0).toBeLessThan(10_000); // the iteration waits for its calls: the 20 s call was aborted
    expect(snap).toMatchObject({ status: 'cancelled', stopReason: 'cancelled' });
    const sleepResult = JSON.parse(messages.filter((m) => m.role === 'tool')[0]!.content!);
    expect(sleepResult.error.code).toBe('cancelled');
    expect(events.at(-1)!.type).toBe('run.cancelled');
    expect((await s.a.cancel(id)).status).toBe(409);
  });

  it('cancels during a model stream by aborting it', async () => {
    const closedBefore = s.mock.closedEarly;
    const id = await s.a.startRun(body('slowstream'));
    // the stream (400 chunks, 30 ms apart) is under way when the cancel comes
    await until('the stream to start', async () => (await eventsSoFar(id)).some((e) => e.type === 'message.delta'));
    await s.a.cancel(id);
    const { snap, events } = await finished(id);
    expect(snap.status).toBe('cancelled');
    expect(events.some((e) => e.type === 'message.delta')).toBe(true);
    // aborted: the product hung up on the model rather than read the stream to its end
    await until('the model stream to be closed early', () => s.mock.closedEarly > closedBefore);
    expect(
      events
        .filter((e) => e.type === 'message.delta')
        .map((e) => e.data.text)
        .join('').length,
    ).toBeLessThan('x '.repeat(400).length);
  });

  it('denies a call that needs approval in headless mode, and the model goes on', async () => {
    const id = await s.a.startRun(body('external', { mode: 'headless' }));
    const { snap, messages, events } = await finished(id);
    expect(snap.status).toBe('completed');
    const denied = JSON.parse(messages.filter((m) => m.role === 'tool')[0]!.content!);
    expect(denied.error).toMatchObject({ code: 'denied' });
    expect(denied.error.message).toMatch(/^Tool denied \(headless\): /);
    expect(events.some((e) => e.type === 'tool.call' && e.data.status === 'denied')).toBe(true);
    expect(s.effects().filter((e) => e.tool === 'send_email')).toHaveLength(0);
  });

  it('turns an invalid queue-intake request into a failed run, never a dropped job', async () => {
    const { Queue } = await import('bullmq');
    const { enqueueRun } = await import('@agentloop/protocol');
    const bad = await enqueueRun({ input: 'x' } as never, {
      connection: s.redis,
      prefix: s.keyPrefix,
      tenantId: 'tenant-a',
    });
    const good = await enqueueRun(body('parallel') as never, {
      connection: s.redis,
      prefix: s.keyPrefix,
      tenantId: 'tenant-a',
      idempotencyKey: 'intake-1',
    });
    const q = new Queue('requests', { connection: s.redis, prefix: s.keyPrefix });
    const resultOf = async (jobId: string) => {
      for (let i = 0; i < 200; i++) {
        const job = await q.getJob(jobId);
        if (job?.returnvalue?.id) return job.returnvalue.id as string;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`intake job ${jobId} did not finish`);
    };
    const failed = await s.a.waitTerminal(await resultOf(bad.id!));
    expect(failed).toMatchObject({ status: 'failed', error: { code: 'invalid_request' } });
    const goodId = await resultOf(good.id!);
    expect((await s.a.waitTerminal(goodId)).status).toBe('completed');
    // the same idempotency key through HTTP names the same run
    const again = await s.a.createRun(body('parallel'), { 'idempotency-key': 'intake-1' });
    expect(again).toMatchObject({ status: 200, json: { id: goodId } });
    await q.close();
  });
});
