import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Queue, Worker, type Job } from 'bullmq';
import { QUEUES, type ResultJob } from '@agentloop/protocol';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { blockingConnection, until } from '../test-support/helpers.js';

const model = { provider: 'openai', name: 'gpt-4o-mini' };

/** SPEC §2: a run created from a `requests` job reports its end on `results` — one job, job id = run id. */
describe('the results queue', () => {
  let s: InProcessStack;
  let requests: Queue;
  let results: Queue;
  beforeAll(async () => {
    s = await InProcessStack.start({ script: (req) => ({ text: `answer to ${req.messages.at(-1)?.content}` }) });
    requests = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    results = new Queue(QUEUES.results, { connection: s.redis, prefix: s.keyPrefix });
  }, 30_000);
  afterAll(async () => {
    await requests?.close();
    await results?.close();
    await s?.stop();
  });
  const resultOf = async (runId: string): Promise<Job<ResultJob>> => {
    let job: Job<ResultJob> | undefined;
    await until(`the results job of ${runId}`, async () => !!(job = await results.getJob(runId)));
    return job!;
  };

  it('a completed run: its status, output, usage and metadata, once however often its requests job is delivered', async () => {
    const runId = `res_${Date.now()}`;
    const request = { input: 'q1', model, metadata: { ticket: 'T-1' } };
    await Promise.all([1, 2, 3].map(() => requests.add('run', { tenantId: 'tenant-a', runId, request })));
    const snap = await s.a.waitTerminal(runId);
    const job = await resultOf(runId);
    expect(job.data).toEqual({
      runId,
      tenantId: 'tenant-a',
      status: 'completed',
      stopReason: 'final_answer',
      output: 'answer to q1',
      error: null,
      usage: snap.usage,
      metadata: { ticket: 'T-1' },
    });
    await requests.add('run', { tenantId: 'tenant-a', runId, request }); // a redelivery after the end
    await until('the requests queue to be worked off', async () =>
      Object.values(await requests.getJobCounts('waiting', 'active', 'delayed')).every((n) => n === 0),
    );
    expect(
      (await results.getJobs(['waiting', 'delayed', 'completed', 'failed', 'active'])).filter((j) => j.id === runId),
    ).toHaveLength(1);
  });

  it('an invalid request: a failed run, reported with its error', async () => {
    const runId = `bad_${Date.now()}`;
    await requests.add('run', {
      tenantId: 'tenant-a',
      runId,
      request: { input: 'x', model: { provider: 'nope', name: 'm' } },
    });
    const job = await resultOf(runId);
    expect(job.data).toMatchObject({ runId, status: 'failed', output: null, error: { code: 'invalid_request' } });
  });

  it('structured output carries outputJson; a run created over HTTP reports nothing on results', async () => {
    const runId = `json_${Date.now()}`;
    s.mock.setScript(() => ({ text: '{"n":1}' }));
    try {
      await requests.add('run', {
        tenantId: 'tenant-a',
        runId,
        request: {
          input: 'j',
          model,
          output: {
            schema: {
              type: 'object',
              properties: { n: { type: 'number' } },
              required: ['n'],
              additionalProperties: false,
            },
          },
        },
      });
      expect((await resultOf(runId)).data).toMatchObject({ status: 'completed', outputJson: { n: 1 } });
      const http = await s.a.startRun({ input: 'over http', model });
      await s.a.waitTerminal(http);
      await new Promise((r) => setTimeout(r, 300));
      expect(await results.getJob(http)).toBeUndefined();
    } finally {
      s.mock.setScript((req) => ({ text: `answer to ${req.messages.at(-1)?.content}` }));
    }
  });

  it('a backend worker consumes it like any BullMQ job', async () => {
    const runId = `consumed_${Date.now()}`;
    const seen: ResultJob[] = [];
    const connection = blockingConnection(s.redis);
    const worker = new Worker<ResultJob>(QUEUES.results, async (job) => void seen.push(job.data), {
      connection,
      prefix: s.keyPrefix,
    });
    try {
      await requests.add('run', { tenantId: 'tenant-b', runId, request: { input: 'q2', model } });
      await until('the backend to get the result', () => seen.some((r) => r.runId === runId));
      expect(seen.filter((r) => r.runId === runId)).toHaveLength(1);
      expect(seen.find((r) => r.runId === runId)).toMatchObject({ tenantId: 'tenant-b', status: 'completed' });
    } finally {
      await worker.close();
      connection.disconnect();
    }
  });
});

describe('the results queue across a crash', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('a run that ends while no relay runs is reported once a process is back (the outbox is written with the end)', async () => {
    const words = Array.from({ length: 100 }, (_, i) => `w${i}`).join(' ');
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script: () => ({ text: words, chunking: 'fine', delayMs: 40 }),
    });
    const requests = new Queue(QUEUES.requests, { connection: s.redis, prefix: s.keyPrefix });
    const results = new Queue(QUEUES.results, { connection: s.redis, prefix: s.keyPrefix });
    try {
      const runId = `crash_${Date.now()}`;
      await requests.add('run', { tenantId: 'tenant-a', runId, request: { input: 'go', model } });
      await until('deltas', async () =>
        (await s!.a.events(runId, { maxEvents: 100, timeoutMs: 300 })).events.some((e) => e.type === 'message.delta'),
      );
      await s.kill('orchestrator', 'SIGKILL');
      expect((await s.a.request('POST', `/v1/runs/${runId}/cancel`, {})).status).toBe(202);
      await s.spawn('orchestrator#2'); // ends the run (cancelled) once the dead process's lock expires, then relays
      const snap = await s.a.waitTerminal(runId, 40_000);
      expect(snap.status).toBe('cancelled');
      let job: Job<ResultJob> | undefined;
      await until('the results job', async () => !!(job = await results.getJob(runId)), 40_000);
      expect(job!.data).toMatchObject({ runId, status: 'cancelled', stopReason: 'cancelled', error: null });
      expect(await s.redis.llen(`${s.keyPrefix}:outbox`)).toBe(0);
      expect(await s.redis.llen(`${s.keyPrefix}:outbox:taken`)).toBe(0);
    } finally {
      await requests.close();
      await results.close();
    }
  }, 120_000);
});
