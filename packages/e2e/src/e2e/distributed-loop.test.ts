import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkEvents, checkTranscript, demoAgentScript, stepOf } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';

const RUN = {
  input: 'What is 17*23 and (2+3)*4, and what time is it in Tokyo?',
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools: ['calculator', 'current_time'],
};

describe('distributed loop, each role its own OS process', () => {
  let s: ProcessStack;
  beforeAll(async () => {
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner', 'compressor'], {
      script: demoAgentScript({ delayMs: 5 }),
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('completes a three-iteration run with parallel calls, transcript and events intact', async () => {
    const id = await s.a.startRun(RUN);
    const snap = await s.a.waitTerminal(id);
    expect(snap.status).toBe('completed');
    expect(snap.stopReason).toBe('final_answer');
    expect(snap.iteration).toBe(3);
    expect(snap.output).toMatch(
      /^17 × 23 = 391, and \(2 \+ 3\) × 4 = 20\. In Tokyo it is now \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+09:00\.$/,
    );
    expect(snap.usage).toMatchObject({ llmCalls: 3, toolCalls: 3 });
    const full = await s.a.getRun(id, 'messages');
    expect(checkTranscript(full.json.messages!)).toEqual([]);
    const ev = await s.a.events(id);
    expect(ev.closed).toBe(true);
    expect(checkEvents(ev.events)).toEqual([]);
    expect(ev.events.filter((e) => e.type === 'iteration.started').map((e) => e.data.iteration)).toEqual([1, 2, 3]);
    const finalDeltas = ev.events
      .filter((e) => e.type === 'message.delta' && e.data.iteration === 3)
      .map((e) => e.data.text)
      .join('');
    expect(finalDeltas).toBe(snap.output);
    // every request the model saw was valid for the strict mock (no 400s) and had the tools
    expect(s.mock.journal.every((j) => j.status === 200)).toBe(true);
  });

  it('replays SSE after a reconnect without gaps or duplicates', async () => {
    const id = await s.a.startRun(RUN);
    const first = await s.a.events(id, { maxEvents: 4 });
    expect(first.ids).toEqual([1, 2, 3, 4]);
    const rest = await s.a.events(id, { lastEventId: 4 });
    expect(rest.closed).toBe(true);
    expect(rest.events[0]!.seq).toBe(5);
    const union = [...first.events, ...rest.events];
    expect(checkEvents(union)).toEqual([]);
    const again = await s.a.events(id);
    expect(again.events).toEqual(union);
    const after = await s.a.events(id, { after: 7 });
    expect(after.events.map((e) => e.seq)).toEqual(union.slice(7).map((e) => e.seq));
  });

  it('makes one run of 10 racing POSTs with one Idempotency-Key, and refuses a different body with 422', async () => {
    const key = `idem-${Date.now()}`;
    const results = await Promise.all(Array.from({ length: 10 }, () => s.a.createRun(RUN, { 'idempotency-key': key })));
    const ids = new Set(results.map((r) => r.json.id));
    expect(ids.size).toBe(1);
    expect(results.filter((r) => r.status === 202)).toHaveLength(1);
    expect(results.filter((r) => r.status === 200)).toHaveLength(9);
    const sameSemantics = await s.a.createRun(
      { tools: RUN.tools, model: RUN.model, input: RUN.input },
      { 'idempotency-key': key },
    );
    expect(sameSemantics.status).toBe(200);
    const different = await s.a.createRun({ ...RUN, input: 'something else' }, { 'idempotency-key': key });
    expect(different.status).toBe(422);
    expect(different.json.error.code).toBe('idempotency_mismatch');
    // another tenant may use the same key for its own run
    const other = await s.b.createRun(RUN, { 'idempotency-key': key });
    expect(other.status).toBe(202);
    expect(other.json.id).not.toBe([...ids][0]);
    await s.a.waitTerminal([...ids][0]!);
    await s.b.waitTerminal(other.json.id);
  });

  it('answers bad input with the SPEC error shapes', async () => {
    const invalid = await s.a.createRun({ ...RUN, limits: { maxIterations: 0 } });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error.code).toBe('invalid_request');
    expect(invalid.json.error.details[0].path).toEqual(['limits', 'maxIterations']);
    const unknownTool = await s.a.createRun({ ...RUN, tools: ['nope'] });
    expect(unknownTool.status).toBe(400);
    const malformed = await s.a.request('POST', '/v1/runs', '{"input": ');
    expect(malformed.status).toBe(400);
    const deep = await s.a.request('POST', '/v1/runs', `${'['.repeat(70)}${']'.repeat(70)}`);
    expect(deep.status).toBe(400);
    const big = await s.a.request('POST', '/v1/runs', JSON.stringify({ ...RUN, input: 'y'.repeat(1_200_000) }));
    expect(big.status).toBe(413);
    expect(big.json.error.code).toBe('payload_too_large');
    // under the body limit as text, four times over it as the value stored (`1e20` is stored as 21 digits)
    const inflating = await s.a.request(
      'POST',
      '/v1/runs',
      JSON.stringify({ ...RUN, metadata: { n: [] } }).replace(
        '"n":[]',
        `"n":[${Array(200_000).fill('1e20').join(',')}]`,
      ),
    );
    expect(inflating.status).toBe(400);
    expect(inflating.json.error.message).toMatch(/larger than 1 MiB/);
    const noKey = await s.anon.createRun(RUN);
    expect(noKey.status).toBe(401);
    expect(noKey.json.error.code).toBe('unauthorized');
    const id = await s.a.startRun(RUN);
    const foreign = await s.b.getRun(id);
    const missing = await s.b.getRun('run_doesnotexist');
    expect(foreign.status).toBe(404);
    expect(foreign.json).toEqual({ error: { ...missing.json.error, message: foreign.json.error?.message } });
    expect((await s.b.cancel(id)).status).toBe(404);
    expect((await s.b.events(id)).status).toBe(404);
    await s.a.waitTerminal(id);
    expect((await s.a.cancel(id)).status).toBe(409);
    for (const r of [invalid, malformed, big, noKey]) expect(r.text).not.toMatch(/at .*\.(js|ts):\d+/);
  });

  it('serves the tool catalog, OpenAPI, health and metrics', async () => {
    const tools = await s.a.request('GET', '/v1/tools');
    expect(tools.json.data.map((t: { name: string }) => t.name)).toEqual(
      expect.arrayContaining(['calculator', 'current_time', 'http_get', 'sleep', 'effect']),
    );
    const openapi = await s.anon.request('GET', '/v1/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.json.openapi).toBe('3.1.0');
    expect(openapi.json.components.schemas.RunRequest.properties.limits).toBeDefined();
    expect((await s.anon.request('GET', '/readyz')).status).toBe(200);
    const metrics = await s.anon.request('GET', '/metrics');
    expect(metrics.text).toMatch(/agentloop_queue_jobs\{queue="orchestrator",state="waiting"\}/);
  });

  it('lists a tenant’s runs newest first with a cursor', async () => {
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await s.b.startRun({ ...RUN, input: `list ${i}` }));
    const page1 = await s.b.request('GET', '/v1/runs?limit=2');
    expect(page1.json.data.map((r: { id: string }) => r.id).slice(0, 2)).toEqual([ids[2], ids[1]]);
    const page2 = await s.b.request('GET', `/v1/runs?limit=2&cursor=${page1.json.nextCursor}`);
    expect(page2.json.data[0].id).toBe(ids[0]);
    for (const id of ids) await s.b.waitTerminal(id);
    const completed = await s.b.request('GET', '/v1/runs?status=completed&limit=200');
    expect(completed.json.data.every((r: { status: string }) => r.status === 'completed')).toBe(true);
    expect((await s.b.request('GET', '/v1/runs?limit=500')).status).toBe(400);
  });

  it('never sends the model a step it cannot pair (stepOf sanity)', () => {
    expect(s.mock.requests.every((r) => stepOf(r) <= 2)).toBe(true);
  });
});
