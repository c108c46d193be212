import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Cluster } from 'ioredis';
import { RetentionSweeper, commandConnection } from '@agentloop/runtime';
import {
  RedisClusterFixture,
  clusterKeysOf,
  checkEvents,
  checkTranscript,
  stepOf,
  stepResults,
  type MockRequest,
  type ReplySpec,
} from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

const model = { provider: 'openai', name: 'gpt-4o-mini' };
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  // two iterations of tool calls (the second on the first's results), then the answer
  tools: (req) =>
    stepOf(req) === 0
      ? {
          toolCalls: [
            { name: 'lookup', args: { key: 'a' } },
            { name: 'lookup', args: { key: 'b' } },
          ],
        }
      : stepOf(req) === 1
        ? { toolCalls: [{ name: 'lookup', args: { key: stepResults(req, 0).join('+').slice(0, 40) } }] }
        : { text: `done: ${stepResults(req, 1).join(' | ')}` },
  email: (req) =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
      : { text: `after: ${stepResults(req, 0)[0]}` },
};

/**
 * SPEC §1 REDIS_CLUSTER_NODES with one partition: `agentloop serve` on a real Redis Cluster (3 primaries, 3 replicas)
 * runs whole runs — tool calls, parking for approval, live SSE, listing — with every key and queue of the deployment
 * in the one slot of the hash tag it derives from the plain AGENTLOOP_PREFIX.
 */
describe.each([
  { layout: 'every role in one process', roles: ['all'] },
  { layout: 'api, orchestrator and tool-runner processes', roles: ['api', 'orchestrator', 'tool-runner'] },
])('Redis Cluster, one partition ($layout)', ({ roles }) => {
  let cluster: RedisClusterFixture;
  let s: ProcessStack;
  let conn: Cluster;
  beforeAll(async () => {
    cluster = await RedisClusterFixture.start();
    conn = new Cluster(cluster.startupNodes);
    s = await ProcessStack.start(roles, {
      script: byScenario(scenarios, 'tools'),
      redisUrl: `redis://127.0.0.1:${cluster.startupNodes[0]!.port}`, // the stack's own cleanup; the product asks the cluster
      env: { REDIS_CLUSTER_NODES: cluster.seeds, AGENTLOOP_PARTITIONS: '1' },
    });
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    conn?.disconnect();
    await cluster?.stop();
  });

  it('a run of tool calls over two iterations completes, its events and transcript whole', async () => {
    const id = await s.a.startRun({ input: '[tools] go', model, tools: ['lookup'] });
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(messages.filter((m) => m.role === 'tool')).toHaveLength(3);
    expect(messages.at(-1)!.content).toMatch(/^done: /);
  }, 60_000);

  it('a run parks for approval; a decision resumes it; a live SSE stream sees it to the end', async () => {
    const id = await s.a.startRun({ input: '[email] send it', model, tools: ['send_email'] });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending.map((p) => p.name)).toEqual(['send_email']);
    // subscribed while parked: what follows comes through the cluster's pub/sub
    const live = s.a.events(id, { timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 300)); // the stream's replay is under way before the decision
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect(r.status, r.text).toBe(202);
    const streamed = await live;
    expect(streamed.closed).toBe(true);
    expect(checkEvents(streamed.events)).toEqual([]);
    expect(streamed.events.map((e) => e.type)).toEqual(
      expect.arrayContaining(['run.paused', 'run.resumed', 'run.completed']),
    );
    const snap = await s.a.waitTerminal(id);
    expect(snap.status).toBe('completed');
    expect(checkTranscript((await s.a.getRun(id, 'messages')).json.messages!)).toEqual([]);
  }, 60_000);

  it('listing shows the tenant its runs, by status; another tenant none of them', async () => {
    const all = await s.a.request('GET', '/v1/runs');
    expect(all.status).toBe(200);
    expect(all.json.data).toHaveLength(2);
    const completed = await s.a.request('GET', '/v1/runs?status=completed');
    expect(completed.json.data.map((x: { status: string }) => x.status)).toEqual(['completed', 'completed']);
    expect((await s.b.request('GET', '/v1/runs')).json.data).toEqual([]);
  });

  it('a parked run cancelled ends cancelled (the cancel goes through its script and the cluster-wide channel)', async () => {
    const id = await s.a.startRun({ input: '[email] send it', model, tools: ['send_email'] });
    await s.a.waitFor(id, (r) => r.status === 'paused');
    expect((await s.a.cancel(id)).status).toBe(202);
    expect((await s.a.waitTerminal(id)).status).toBe('cancelled');
  }, 60_000);

  it('every process is ready and its metrics (queue gauges, parked runs) read the cluster', async () => {
    const urls = [...s.procs.values()].map(
      (p) => /^agentloop ready .* metrics=(\S+)/.exec(p.output.find((l) => l.startsWith('agentloop ready'))!)![1]!,
    );
    expect(urls).toHaveLength(roles.length);
    for (const url of urls) {
      const ready = await fetch(url.replace(/\/metrics$/, '/readyz'));
      expect(ready.status, `${url}: ${await ready.text()}`).toBe(200);
    }
    const metrics = await s.a.request('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/agentloop_queue_jobs\{[^}]*queue="orchestrator"/);
  });

  it('the retention sweep (a script over the tenant indexes) drops finished runs from listing once due', async () => {
    const sweeper = new RetentionSweeper(commandConnection(conn), `{${s.prefix}}`);
    expect(await sweeper.sweep(Date.now() + 10 * 365 * 86_400_000)).toBe(3);
    expect((await s.a.request('GET', '/v1/runs')).json.data).toEqual([]);
  });

  it('every key the deployment wrote is under the hash tag of its prefix, in that one slot', async () => {
    const tag = `{${s.prefix}}`;
    const slot = Number(await conn.call('CLUSTER', 'KEYSLOT', tag));
    const keys = await clusterKeysOf(conn, s.prefix);
    const names = [...keys.keys()];
    // runs, their indexes, the tenants' lists, BullMQ's queues: all written, all under the tag
    expect(names.filter((k) => k.startsWith(`${tag}:run:`)).length).toBeGreaterThan(0);
    expect(names.filter((k) => k.startsWith(`${tag}:orchestrator:`)).length).toBeGreaterThan(0);
    expect(names.filter((k) => k.startsWith(`${tag}:tools-`)).length).toBeGreaterThan(0);
    expect(names.filter((k) => !k.startsWith(`${tag}:`))).toEqual([]);
    expect(new Set(keys.values())).toEqual(new Set([slot]));
    // and that slot holds these keys only, all on one primary
    const counts = await Promise.all(
      conn.nodes('master').map(async (n) => Number(await n.call('CLUSTER', 'COUNTKEYSINSLOT', slot))),
    );
    expect(counts.filter((c) => c > 0)).toEqual([keys.size]);
  });
});
