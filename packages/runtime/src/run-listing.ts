import type { Redis } from 'ioredis';
import type { DeploymentKeys } from '@agentloop/protocol';
import { STATE_FIELDS, parseRunState, stateHash, type RunState } from './run-state.js';
import type { ListCursor } from './run-store-types.js';

/**
 * A tenant's runs, newest first (by creation), optionally in one status. Keyset paging: the cursor is the last run
 * returned, so a page never repeats or skips a run while new ones arrive, and a page costs the same with 100 or
 * 100,000 runs in the history (the status filter reads its own index, never the history).
 */
export async function listRuns(redis: Redis, keys: DeploymentKeys, tenant: string, opts: { status?: string; limit: number; cursor?: ListCursor | null }): Promise<{ runs: RunState[]; nextCursor: ListCursor | null }> {
  const idx = opts.status ? keys.tenantRunsByStatus(tenant, opts.status) : keys.tenantRuns(tenant);
  const out: RunState[] = [];
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
    for (const c of page) pipe.hmget(keys.run(c.runId).state, ...STATE_FIELDS);
    const rows = (await pipe.exec()) ?? [];
    for (let i = 0; i < page.length; i++) {
      after = page[i]!;
      const st = parseRunState(stateHash((rows[i]?.[1] ?? []) as Array<string | null>));
      // gone (retention over, not swept yet) or moved to another status since the index was read: not listed
      if (!st || (opts.status && st.status !== opts.status)) continue;
      if (out.length === opts.limit) return { runs: out, nextCursor: { score: out.length ? out[out.length - 1]!.createdAt : after.score, runId: out[out.length - 1]!.id } };
      out.push(st);
    }
    if (raw.length / 2 < want + 16) return { runs: out, nextCursor: null };
  }
}
