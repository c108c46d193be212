import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Queue } from 'bullmq';
import { DeploymentKeys, QUEUES, type Message } from '@agentloop/protocol';
import { checkTranscript, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { until } from '../test-support/helpers.js';

const model = { provider: 'openai', name: 'gpt-4o-mini' };
const users = (req: MockRequest) => req.messages.filter((m) => m.role === 'user').map((m) => m.content);

/** SPEC §2 Threads: runs continue a conversation, one at a time, whatever the requests race. */
describe('threads', () => {
  let s: InProcessStack;
  /** A scenario per input prefix: `slow:` streams for a while; otherwise the reply lists the user turns the model saw. */
  const script = (req: MockRequest): ReplySpec => {
    const last = String(users(req).at(-1) ?? '');
    if (last.startsWith('slow:'))
      return { text: `slow answer to ${last} ${'x '.repeat(200)}`, chunking: 'fine', delayMs: 25 };
    return { text: `seen [${users(req).join(' | ')}]` };
  };
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
  }, 30_000);
  afterAll(() => s?.stop());
  const thread = () => `t_${Math.random().toString(36).slice(2, 10)}`;
  const post = (body: Record<string, unknown>, as: 'a' | 'b' = 'a') =>
    s[as].request('POST', '/v1/runs', { model, ...body });

  it('carries the conversation over three runs; GET /v1/threads/:id lists the runs and the messages, without system prompts', async () => {
    const t = thread();
    const ids: string[] = [];
    for (const input of ['my name is Ada', 'what is my name?', 'and again?']) {
      const r = await post({ input, threadId: t, system: 'be brief' });
      expect(r.status).toBe(202);
      ids.push((r.json as { id: string }).id);
      await s.a.waitTerminal(ids.at(-1)!);
    }
    const third = (await s.a.getRun(ids[2]!)).json;
    expect(third).toMatchObject({ status: 'completed', threadId: t });
    expect(third.output).toBe('seen [my name is Ada | what is my name? | and again?]');
    const got = await s.a.request('GET', `/v1/threads/${t}`);
    expect(got.status).toBe(200);
    const body = got.json as { id: string; runs: string[]; messages: Message[] };
    expect(body.id).toBe(t);
    expect(body.runs).toEqual(ids);
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(body.messages.some((m) => m.role === 'system')).toBe(false);
    expect(checkTranscript(body.messages)).toEqual([]);
    // each run's own transcript: its system prompt first, then the thread's conversation, then its input
    const msgs = (await s.a.getRun(ids[2]!, 'messages')).json.messages!;
    expect(msgs[0]).toMatchObject({ role: 'system', content: 'be brief' });
    expect(msgs.filter((m) => m.role === 'system')).toHaveLength(1);
  });

  it('a thread whose run has ended is not busy while the relay has yet to release it: the request waits, then 202', async () => {
    const t = thread();
    const first = (await post({ input: 'my name is Ada', threadId: t })).json as { id: string };
    await s.a.waitTerminal(first.id);
    const hash = new DeploymentKeys(s.keyPrefix).thread('tenant-a', t).hash;
    await until('the thread released', async () => !(await s.redis.hget(hash, 'active')));
    // the moment between the run's end and the relay's step, held open: the ended run is the thread's active one
    await s.redis.hset(hash, 'active', first.id);
    const release = new Promise((r) => setTimeout(r, 300)).then(() => s.redis.hdel(hash, 'active'));
    const second = await post({ input: 'what is my name?', threadId: t });
    await release;
    expect(second.status).toBe(202);
    const { id } = second.json as { id: string };
    expect((await s.a.waitTerminal(id)).status).toBe('completed');
  });

  it('a run whose thread no longer fits the context window is compressed, not failed', async () => {
    const t = thread();
    const pad = (i: number) => `turn ${i}: ${'lorem ipsum dolor sit amet '.repeat(90)}`; // ~500 tokens a turn
    let last = '';
    for (let i = 1; i <= 4; i++) {
      const r = await post({ input: pad(i), threadId: t, model: { ...model, contextWindow: 3000 } });
      expect(r.status).toBe(202);
      last = (r.json as { id: string }).id;
      expect((await s.a.waitTerminal(last)).status).toBe('completed');
    }
    const events = (await s.a.events(last)).events;
    expect(events.some((e) => e.type === 'context.compressed')).toBe(true);
    expect(((await s.a.request('GET', `/v1/threads/${t}`)).json as { runs: string[] }).runs).toHaveLength(4);
  });

  it('reject [default]: a request for a busy thread is 409, even when ten race for a free one', async () => {
    const t = thread();
    const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => post({ input: `slow: ${i}`, threadId: t })));
    expect(racing.filter((r) => r.status === 202)).toHaveLength(1);
    expect(racing.filter((r) => r.status === 409)).toHaveLength(9);
    expect((racing.find((r) => r.status === 409)!.json as { error: { code: string } }).error.code).toBe('conflict');
    const active = (racing.find((r) => r.status === 202)!.json as { id: string }).id;
    await s.a.waitTerminal(active);
    expect((await post({ input: 'after', threadId: t })).status).toBe(202); // free again once it ended
  });

  it('enqueue: racing requests all run, one at a time, each seeing the runs before it', async () => {
    const t = thread();
    const first = (await post({ input: 'slow: first', threadId: t })).json as { id: string };
    const queued = await Promise.all(
      [1, 2, 3].map((i) => post({ input: `q${i}`, threadId: t, threadPolicy: 'enqueue' })),
    );
    expect(queued.map((r) => r.status)).toEqual([202, 202, 202]);
    const ids = [first.id, ...queued.map((r) => (r.json as { id: string }).id)];
    expect((await s.a.getRun(ids[1]!)).json.status).toBe('queued'); // waits behind the active run
    for (const id of ids) await s.a.waitTerminal(id, 30_000);
    const snaps = await Promise.all(ids.map(async (id) => (await s.a.getRun(id)).json));
    expect(snaps.every((r) => r.status === 'completed')).toBe(true);
    // never two active at once: each run started after the previous one ended, and saw every earlier turn
    const order = (await s.a.request('GET', `/v1/threads/${t}`)).json as { runs: string[]; messages: Message[] };
    expect(order.runs).toEqual(ids);
    const byStart = [...snaps].sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    expect(byStart.length).toBe(4);
    const lastOutput = snaps.map((r) => r.output!).find((o) => o.split('|').length === 4);
    expect(lastOutput).toBeDefined(); // the last of them saw all four user turns
    const seenCounts = snaps
      .slice(1)
      .map((r) => r.output!.split('|').length)
      .sort();
    expect(seenCounts).toEqual([2, 3, 4]);
    expect(checkTranscript(order.messages)).toEqual([]);
  });

  it('interrupt: the active run is cancelled, then the new one starts and sees its input', async () => {
    const t = thread();
    const first = ((await post({ input: 'slow: long task', threadId: t })).json as { id: string }).id;
    await until('the first run to stream', async () =>
      (await s.a.events(first, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
    );
    const r = await post({ input: 'stop, do this instead', threadId: t, threadPolicy: 'interrupt' });
    expect(r.status).toBe(202);
    const second = (r.json as { id: string }).id;
    const cancelled = await s.a.waitTerminal(first);
    expect(cancelled.status).toBe('cancelled');
    const done = await s.a.waitTerminal(second);
    expect(done.status).toBe('completed');
    expect(done.output).toBe('seen [slow: long task | stop, do this instead]');
  });

  it('interrupt under racing requests: never two runs active, every accepted run ends, none runs twice', async () => {
    const t = thread();
    const first = ((await post({ input: 'slow: first', threadId: t })).json as { id: string }).id;
    await until('the first run to stream', async () =>
      (await s.a.events(first, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
    );
    const racing = await Promise.all(
      [1, 2, 3].map((i) => post({ input: `slow: i${i}`, threadId: t, threadPolicy: 'interrupt' })),
    );
    expect(racing.map((r) => r.status)).toEqual([202, 202, 202]);
    const ids = [first, ...racing.map((r) => (r.json as { id: string }).id)];
    const snaps = await Promise.all(ids.map((id) => s.a.waitTerminal(id, 60_000)));
    expect(snaps[0]!.status).toBe('cancelled');
    expect(snaps.slice(1).some((r) => r.status === 'completed')).toBe(true); // the last of them runs to its end
    // one run at a time: each run's first model request came after the previous run's end
    const spans = await Promise.all(
      ids.map(async (id) => {
        const ev = (await s.a.events(id)).events;
        return { start: ev.find((e) => e.type === 'run.started')?.at ?? null, end: ev.at(-1)!.at };
      }),
    );
    const started = spans.filter((x) => x.start !== null).sort((a, b) => a.start!.localeCompare(b.start!));
    for (let i = 1; i < started.length; i++) expect(started[i]!.start! >= started[i - 1]!.end).toBe(true);
    const thread_ = (await s.a.request('GET', `/v1/threads/${t}`)).json as { runs: string[]; messages: Message[] };
    expect(thread_.runs.sort()).toEqual([...ids].sort());
    expect(checkTranscript(thread_.messages)).toEqual([]);
  });

  it('threads belong to their tenant: another tenant gets 404, and its own thread of the same id starts empty', async () => {
    const t = thread();
    const a = ((await post({ input: 'secret of A', threadId: t })).json as { id: string }).id;
    await s.a.waitTerminal(a);
    expect((await s.b.request('GET', `/v1/threads/${t}`)).status).toBe(404);
    expect((await s.a.request('GET', '/v1/threads/nope_never')).status).toBe(404);
    const b = await post({ input: 'hello from B', threadId: t }, 'b');
    expect(b.status).toBe(202);
    const snap = await s.b.waitTerminal((b.json as { id: string }).id);
    expect(snap.output).toBe('seen [hello from B]');
  });

  it('queue intake: a request for a busy thread under reject becomes a failed run (thread_busy), never a lost job', async () => {
    const t = thread();
    const first = ((await post({ input: 'slow: busy', threadId: t })).json as { id: string }).id;
    const queue = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    try {
      const runId = `thr_q_${Date.now()}`;
      await queue.add('run', { tenantId: 'tenant-a', runId, request: { input: 'from the queue', model, threadId: t } });
      const snap = await s.a.waitTerminal(runId);
      expect(snap).toMatchObject({ status: 'failed', error: { code: 'thread_busy' } });
    } finally {
      await queue.close();
    }
    await s.a.waitTerminal(first);
  });
});
