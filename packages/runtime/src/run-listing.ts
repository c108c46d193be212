import type { Redis } from 'ioredis';
import type { DeploymentKeys, RunRequest, RunSnapshot } from '@agentloop/protocol';
import { STATE_FIELD, parseRunState, toSnapshot } from './run-state.js';
import type { ListCursor } from './run-store-types.js';

/**
 * The state fields a listed run's snapshot shows (toSnapshot), and the ones parseRunState checks: not `request` (up
 * to 1 MiB, of which a snapshot shows only whether it has `output.schema`: the `structured` field says that), nor
 * the view prefix, the batch or the loop's bookkeeping.
 */
const LIST_FIELDS = [
  'v', 'id', 'tenant', 'status', 'phase', 'iteration', 'createdAt', 'updatedAt', 'model', 'mode', 'metadata', 'error', 'stopReason', 'output',
  STATE_FIELD.outputJson, STATE_FIELD.outputRepair, 'promptTokens', 'completionTokens', 'reasoningTokens', 'cachedTokens', 'totalTokens', 'costUsd',
  'llmCalls', 'toolCalls', 'pending', STATE_FIELD.structured,
] as const;

/**
 * Whether a run asked for structured output: its `structured` field, set at creation. A run created by an earlier
 * build has none: its request is read, alone (a listing holds at most one request at a time).
 */
async function structured(redis: Redis, stateKey: string, flag: string | undefined): Promise<boolean> {
  if (flag === '1' || flag === '0') return flag === '1';
  const request = await redis.hget(stateKey, 'request');
  if (request === null) return false; // gone since its state was read (retention)
  return Boolean((JSON.parse(request) as Partial<RunRequest>).output);
}

/**
 * A tenant's runs, newest first (by creation), optionally in one status. Keyset paging: the cursor is the last run
 * returned, so a page never repeats or skips a run while new ones arrive, and a page costs the same with 100 or
 * 100,000 runs in the history (the status filter reads its own index, never the history).
 * Each run as its snapshot, read from the fields a snapshot shows (never the request).
 */
export async function listRuns(redis: Redis, keys: DeploymentKeys, tenant: string, opts: { status?: string; limit: number; cursor?: ListCursor | null }): Promise<{ runs: RunSnapshot[]; nextCursor: ListCursor | null }> {
  const idx = opts.status ? keys.tenantRunsByStatus(tenant, opts.status) : keys.tenantRuns(tenant);
  const out: RunSnapshot[] = [];
  let lastCreatedAt = 0;
  let after = opts.cursor ?? null;
  for (;;) {
    const want = opts.limit - out.length + 1; // one more than needed: whether another page follows
    // runs created in the same millisecond share a score; ZRANGE REV orders those by id, descending
    const raw = await redis.zrange(idx, after ? after.score : '+inf', '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, want + 16, 'WITHSCORES');
    const page: ListCursor[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const c = { runId: raw[i]!, score: Number(raw[i + 1]) };
      if (after && c.score === after.score && c.runId >= after.runId) continue;
      page.push(c);
    }
    if (!page.length) return { runs: out, nextCursor: null };
    const pipe = redis.pipeline();
    for (const c of page) pipe.hmget(keys.run(c.runId).state, ...LIST_FIELDS);
    const rows = (await pipe.exec()) ?? [];
    for (let i = 0; i < page.length; i++) {
      after = page[i]!;
      const values = (rows[i]?.[1] ?? []) as Array<string | null>;
      const h: Record<string, string> = {};
      LIST_FIELDS.forEach((f, j) => {
        if (values[j] !== null && values[j] !== undefined) h[f] = values[j];
      });
      const st = parseRunState(h);
      // gone (retention over, not swept yet) or moved to another status since the index was read: not listed
      if (!st || (opts.status && st.status !== opts.status)) continue;
      if (out.length === opts.limit) return { runs: out, nextCursor: { score: out.length ? lastCreatedAt : after.score, runId: out[out.length - 1]!.id } };
      out.push(toSnapshot(st, { structured: await structured(redis, keys.run(st.id).state, h[STATE_FIELD.structured]) }));
      lastCreatedAt = st.createdAt;
    }
    if (raw.length / 2 < want + 16) return { runs: out, nextCursor: null };
  }
}
