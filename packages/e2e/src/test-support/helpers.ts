import { expect } from 'vitest';
import { checkEvents, checkTranscript, type MockRequest, type ReplySpec, type Script } from '@agentloop/testing';
import { Cluster, type Redis } from 'ioredis';
import type { ApiClient } from './api-client.js';

/**
 * A connection of its own to the stack's Redis, for what BullMQ blocks on (QueueEvents, a Worker): `redis` duplicated,
 * a Cluster as a Cluster (whose `duplicate` takes startup nodes first, then options). The caller closes it.
 */
export function blockingConnection(redis: Redis): Redis {
  const r = redis as Redis | Cluster;
  return (
    r instanceof Cluster
      ? r.duplicate([], { redisOptions: { maxRetriesPerRequest: null } })
      : r.duplicate({ maxRetriesPerRequest: null })
  ) as Redis;
}

/**
 * Every key of the stack's Redis whose name matches `pattern` (SCAN MATCH, and TYPE when given), scanned on each
 * primary of a Cluster (a Cluster's own SCAN asks one node only).
 */
export async function scanKeys(redis: Redis, pattern: string, type?: string): Promise<string[]> {
  const r = redis as Redis | Cluster;
  if (r instanceof Cluster) await r.ping(); // connected, so it knows the primaries
  const out: string[] = [];
  for (const node of r instanceof Cluster ? r.nodes('master') : [r]) {
    let cursor = '0';
    do {
      const [next, batch] = (await node.call(
        'SCAN',
        cursor,
        'MATCH',
        pattern,
        ...(type ? ['TYPE', type] : []),
        'COUNT',
        '1000',
      )) as [string, string[]];
      out.push(...batch);
      cursor = next;
    } while (cursor !== '0');
  }
  return out;
}

/** Poll until fn() is true. */
export async function until(what: string, fn: () => boolean | Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!(await fn())) {
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One mock script for many scenarios: the run's input names its scenario as `[name]`. */
export function byScenario(scenarios: Record<string, (req: MockRequest) => ReplySpec>, fallback: string): Script {
  return (req) => {
    const name =
      /\[(\w+)\]/.exec(
        req.messages.find((m) => m.role === 'user' && /\[\w+\]/.test(m.content ?? ''))?.content ?? '',
      )?.[1] ?? fallback;
    return scenarios[name]!(req);
  };
}

/** Waits for the run to end, then checks the SPEC invariants of its transcript and event stream. */
export async function finishedRun(client: ApiClient, id: string, timeoutMs = 30_000) {
  const snap = await client.waitTerminal(id, timeoutMs);
  const messages = (await client.getRun(id, 'messages')).json.messages!;
  const events = (await client.events(id)).events;
  expect(checkTranscript(messages)).toEqual([]);
  expect(checkEvents(events)).toEqual([]);
  return { snap, messages, events };
}

/**
 * What Redis holds about one run (its state fields, minus the transcript, and where each of its jobs is), for the
 * message of a test that found the run stuck: a failure in CI must say where the run stopped.
 */
export async function describeRun(redis: Redis, prefix: string, runId: string): Promise<string> {
  const out: string[] = [];
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `*${runId}*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  for (const key of keys.sort()) {
    const type = await redis.type(key);
    if (type !== 'hash') {
      out.push(`${key} (${type})`);
      continue;
    }
    const h = await redis.hgetall(key);
    const fields = Object.entries(h).map(([f, v]) => `${f}=${v.length > 160 ? `${v.slice(0, 160)}…` : v}`);
    out.push(`${key}: ${fields.join(' | ')}`);
    const job = /^(.*):([^:]+)$/.exec(key);
    if (job && !key.startsWith(`${prefix}:run:`)) {
      const [, queue, id] = job;
      const where: string[] = [];
      for (const list of ['wait', 'active', 'paused'])
        if ((await redis.lpos(`${queue}:${list}`, id!)) !== null) where.push(list);
      for (const set of ['prioritized', 'delayed', 'waiting-children', 'completed', 'failed'])
        if ((await redis.zscore(`${queue}:${set}`, id!)) !== null) where.push(set);
      if (await redis.exists(`${key}:lock`)) where.push('locked');
      out.push(`  ↳ job in: ${where.join(', ') || 'no list'}`);
    }
  }
  return out.join('\n');
}
