import { describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RunRequestSchema, newRunId, type NewEvent, type RunRequestInput } from '@agentloop/protocol';
import { testRedisUrl } from '@agentloop/testing';
import { useTestStore } from './test-support/test-store.js';
import { ThreadStore } from './thread-store.js';
import { RunStore } from './run-store.js';
import { RetentionSweeper } from './retention-sweeper.js';
import { callsCheckpoint } from './test-support/run-fixtures.js';

/** Commands whose first argument is not a key (or that touch none). */
const NOT_A_KEY = new Set(['publish']);

/**
 * Every key a script touches is declared in its KEYS (Redis Cluster's rule; SPEC §1): MONITOR shows an EVALSHA, then the
 * commands its script ran (source `lua`), so each command's key is checked against the keys that EVALSHA declared, over a run's whole life (every run script, and the thread and webhook ones).
 */
describe('run scripts declare every key they touch (real Redis, MONITOR)', () => {
  const t = useTestStore('script-keys');
  const started: NewEvent[] = [
    { type: 'run.started', data: {} },
    { type: 'iteration.started', data: { iteration: 1 } },
  ];
  const request = (extra: Partial<RunRequestInput> = {}) =>
    RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' }, ...extra });

  /** A run's whole life, through every script: run once to load the scripts (EVAL's text is no MONITOR line to parse), then watched. */
  async function life(thread: string): Promise<void> {
    const s = t.store;
    const threads = new ThreadStore(t.redis, s.keys, 60);
    const runId = newRunId();
    const req = request({ threadId: thread, notify: { url: 'https://hooks.example/x' } } as Partial<RunRequestInput>);
    expect(
      await s.create({
        runId,
        tenant: 'T',
        request: req,
        messages: [{ role: 'user', content: 'hi' }],
        bodyHash: 'h',
        idempotencyKey: `k-${thread}`,
      }),
    ).toMatchObject({ created: true });
    const waiting = newRunId(); // a second run of the thread waits for the first
    await s.create({
      runId: waiting,
      tenant: 'T',
      request: request({ threadId: thread, threadPolicy: 'enqueue' } as Partial<RunRequestInput>),
      messages: [{ role: 'user', content: 'next' }],
      bodyHash: 'h2',
    });
    await s.watch(runId, Date.now() + 60_000);
    await s.startIteration(runId, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: started,
      returnState: true,
    });
    await s.appendEvents(runId, 1, [{ type: 'message.delta', data: { iteration: 1, text: 'x' } }], true);
    const ids = ['c1', 'c2', 'c3'];
    const pending = [{ callId: 'c1', name: 'a', arguments: {}, pauseType: 'awaiting_approval' as const }];
    const parked = () => callsCheckpoint(ids, 'default', { pending, expiresAt: Date.now() + 60_000 });
    expect(await s.checkpoint(runId, parked())).toBe(true);
    expect(
      await s.applyDecisions(runId, {
        tenant: 'T',
        decisions: [{ callId: 'c1', action: 'approve', outcome: null, meta: null }],
        edits: {},
      }),
    ).toMatchObject({ kind: 'resumed' });
    expect(
      await s.calls.markToolRunning(runId, 'c1', { callId: 'c1', name: 'a', arguments: {}, status: 'running' }, 'j@1'),
    ).toBe('first');
    await s.calls.recordToolResult(
      runId,
      'c1',
      { status: 'completed', content: 'ok', executed: true },
      { callId: 'c1', name: 'a', arguments: {}, status: 'completed' },
      undefined,
      'j@1',
    );
    await s.calls.closeToolCall(runId, 'c2', 'job_failed');
    await s.calls.recordToolResult(
      runId,
      'c3',
      { status: 'completed', content: 'ok', executed: true },
      { callId: 'c3', name: 'a', arguments: {}, status: 'completed' },
      { callId: 'c3', name: 'a', arguments: {}, status: 'running' },
    );
    await s.startIteration(runId, {
      iteration: 2,
      expectPhase: 'tools',
      expectPendingFinal: '',
      callMode: 'tools',
      events: [],
    });
    await s.claimModelCall(runId, 2, (await s.load(runId))!.owner ?? '', 'j@2', {
      type: 'llm.retry',
      data: { provider: 'openai', model: 'm', attempt: 1, reason: 'x', discardOutput: true },
    });
    expect(await s.applyCompression(runId, { iteration: 2, tv: 0, prefix: [], from: 1, record: {}, events: [] })).toBe(
      1,
    );
    await s.addUsage(runId, {
      promptTokens: 1,
      completionTokens: 1,
      reasoningTokens: 0,
      cachedTokens: 0,
      totalTokens: 2,
      costUsd: 0,
      llmCalls: 1,
    });
    await s.eventsRaw(runId);
    expect(
      await s.finish(runId, {
        expectIteration: 2,
        status: 'completed',
        stopReason: 'final_answer',
        error: null,
        events: [],
        owner: 'j@2',
      }),
    ).toEqual({ closed: [] });
    const w = await s.webhooks.enqueue(runId, 1, 'run.queued');
    if (w.kind === 'queued') {
      const due = await s.webhooks.next(runId, w.gen);
      if (due.kind === 'due') await s.webhooks.saveBody(runId, w.gen, due.index, '{}');
    }
    expect(await threads.runEnded(runId)).toMatchObject({ runId: waiting });
    expect((await s.requestCancel(waiting, 'test')).kind).toBe('requested');
    // a paused run cancelled directly (requestCancel's own end)
    const paused = newRunId();
    await s.create({
      runId: paused,
      tenant: 'T',
      request: request(),
      messages: [{ role: 'user', content: 'hi' }],
      bodyHash: 'h',
    });
    await s.startIteration(paused, {
      iteration: 1,
      expectPhase: 'queued',
      expectPendingFinal: '',
      callMode: 'tools',
      events: started,
    });
    await s.checkpoint(paused, parked());
    expect((await s.requestCancel(paused, 'test')).kind).toBe('ended');
    // their retention over, the sweeper drops the finished runs' index entries
    expect(await sweeper().sweep(Date.now() + 366 * 86_400_000)).toBeGreaterThan(0);
  }
  let kept: RetentionSweeper | null = null; // one for both lives: ioredis loads a defined script with EVAL on first use
  const sweeper = () => (kept ??= new RetentionSweeper(t.redis, t.prefix));
  let threads = 0;
  const newThread = () => `th${++threads}`;

  it("over a run's whole life: creation (idempotency key, thread, notify), pause, decisions, tools, compression, end, retention", async () => {
    await life(newThread());
    // the listeners are on before the connection enters monitor mode: other test files' traffic arriving with MONITOR's
    // OK, before ioredis flips its status (a microtask later), or while the monitor closes, is lines it cannot place
    const monitor = new Redis(testRedisUrl(), { monitor: true });
    let watching = false;
    let closing = false;
    const monitorErrors: unknown[] = [];
    monitor.on('error', (err: unknown) => void (watching && !closing && monitorErrors.push(err)));
    await new Promise((r) => monitor.once('monitoring', r));
    await new Promise((r) => setTimeout(r, 50));
    watching = true;
    const undeclared: string[] = [];
    let scriptsSeen = 0;
    let declared: Set<string> | null = null; // the keys of the script whose commands the monitor shows now
    const marker = `done-${newRunId()}`;
    let seenAll!: () => void;
    const allSeen = new Promise<void>((r) => (seenAll = r));
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua') {
        if (declared && !NOT_A_KEY.has(args[0]!.toLowerCase()) && args[1] !== undefined && !declared.has(args[1]))
          undeclared.push(`${args[0]} ${args[1]}`);
        return;
      }
      declared = null;
      if (/^evalsha$/i.test(args[0] ?? '') && args.slice(3).some((a) => a.startsWith(`${t.prefix}:`))) {
        declared = new Set(args.slice(3, 3 + Number(args[2])));
        scriptsSeen++;
      }
      if (args[0]?.toLowerCase() === 'echo' && args[1] === marker) seenAll();
    });
    try {
      await life(newThread());
      await t.redis.echo(marker); // the monitor sees it after every script above
      await allSeen;
    } finally {
      closing = true;
      monitor.disconnect();
    }
    expect(scriptsSeen).toBeGreaterThan(20);
    expect(undeclared).toEqual([]);
    expect(monitorErrors).toEqual([]);
  });

  it("a status change names the tenant's indexes from what the store kept; a run id reused by another tenant is read again, not misindexed", async () => {
    const s = t.store;
    const runId = newRunId();
    await s.create({
      runId,
      tenant: 'A',
      request: request(),
      messages: [{ role: 'user', content: 'hi' }],
      bodyHash: 'h',
      idempotencyKey: 'ka',
    }); // kept: A, its key
    // its keys are gone (retention), and another process creates the same id for tenant B
    const k = s.keys.run(runId);
    await t.redis.del(k.state, k.messages);
    const other = new RunStore(t.redis, t.prefix);
    await other.create({
      runId,
      tenant: 'B',
      request: request(),
      messages: [{ role: 'user', content: 'hi' }],
      bodyHash: 'h',
    });
    expect(
      await s.startIteration(runId, {
        iteration: 1,
        expectPhase: 'queued',
        expectPendingFinal: '',
        callMode: 'tools',
        events: started,
      }),
    ).toMatchObject({ toolCalls: 0 });
    expect(
      await s.finish(runId, {
        expectIteration: 1,
        status: 'cancelled',
        stopReason: 'cancelled',
        error: null,
        events: [],
      }),
    ).toEqual({ closed: [] });
    const has = async (key: string) => (await t.redis.zscore(key, runId)) !== null;
    expect(await has(s.keys.tenantRunsByStatus('B', 'cancelled'))).toBe(true);
    expect(await has(s.keys.tenantRunsByStatus('B', 'queued'))).toBe(false);
    expect(await has(s.keys.tenantRunsByStatus('B', 'running'))).toBe(false);
    expect(await has(s.keys.tenantRunsByStatus('A', 'cancelled'))).toBe(false);
    expect(await has(s.keys.tenantRunsByStatus('A', 'queued'))).toBe(true); // A's entry is the sweeper's to drop, untouched
    expect(await t.redis.ttl(s.keys.idempotency('A', 'ka'))).toBeGreaterThan(60_000); // A's key keeps its own 24 h
  });
});
