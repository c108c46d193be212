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
  'v',
  'id',
  'tenant',
  'status',
  'phase',
  'iteration',
  'createdAt',
  'updatedAt',
  'model',
  'mode',
  'metadata',
  'error',
  'stopReason',
  'output',
  STATE_FIELD.outputJson,
  STATE_FIELD.outputRepair,
  'promptTokens',
  'completionTokens',
  'reasoningTokens',
  'cachedTokens',
  'totalTokens',
  'costUsd',
  'llmCalls',
  'toolCalls',
  'pending',
  STATE_FIELD.structured,
  'threadId',
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

/** A page of a tenant's runs: each with its index position (where a merge of partitions' pages orders it). */
export interface RunPage {
  runs: RunSnapshot[];
  positions: ListCursor[];
  nextCursor: ListCursor | null;
}

/** Index rows one page reads at most, the rows it skips included: the bound of a page's cost. */
export const LIST_SCAN_LIMIT = 1000;

/**
 * A tenant's runs, newest first (by creation), optionally in one status. Keyset paging: the cursor is the index
 * position of the last row read, so a page never repeats or skips a run while new ones arrive, and a page costs the
 * same with 100 or 100,000 runs in the history (the status filter reads its own index, never the history).
 * Each run as its snapshot, read from the fields a snapshot shows (never the request).
 *
 * The index is not trusted: a row is listed only when its run still exists, is the tenant's (a run id given at
 * queue intake may be reused by another tenant once the first run expired, before the sweeper removes the old row)
 * and is in the status asked for. Skipped rows do not shorten a page: it reads on to fill `limit`, up to
 * `scanLimit` rows; a page that reaches that bound ends early — with fewer runs, possibly none — and a cursor past
 * the rows it read, so a client that follows `nextCursor` until null sees every run once.
 */
export async function listRuns(
  redis: Redis,
  keys: DeploymentKeys,
  tenant: string,
  opts: { status?: string; limit: number; cursor?: ListCursor | null },
  scanLimit = LIST_SCAN_LIMIT,
): Promise<RunPage> {
  const idx = opts.status ? keys.tenantRunsByStatus(tenant, opts.status) : keys.tenantRuns(tenant);
  const out: RunSnapshot[] = [];
  const positions: ListCursor[] = [];
  let after = opts.cursor ?? null;
  let scanned = 0;
  let offset = 0; // rows at the cursor's score already passed that a whole read returned (ties of one millisecond)
  for (;;) {
    if (scanned >= scanLimit) return { runs: out, positions, nextCursor: after };
    // one more than needed (whether another page follows), more each round that skipped rows (bounded by scanLimit)
    const batch = Math.min(scanLimit - scanned, Math.max(opts.limit - out.length + 17, scanned));
    // from the cursor's score on, where the rows it passed (its own, and ties with greater ids: ZRANGE REV orders
    // a score's rows by id, descending) come first: one more row than the batch, for the cursor's own
    const raw = await redis.zrange(
      idx,
      after ? after.score : '+inf',
      '-inf',
      'BYSCORE',
      'REV',
      'LIMIT',
      offset,
      batch + 1,
      'WITHSCORES',
    );
    const end = raw.length / 2 < batch + 1;
    const page: ListCursor[] = [];
    let passed = 0;
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const c = { runId: raw[i]!, score: Number(raw[i + 1]) };
      if (after && c.score === after.score && c.runId >= after.runId) passed++;
      else if (page.length < batch) page.push(c);
    }
    if (!page.length) {
      if (end) return { runs: out, positions, nextCursor: null };
      offset += passed;
      continue;
    }
    offset = 0;
    const pipe = redis.pipeline();
    for (const c of page) pipe.hmget(keys.run(c.runId).state, ...LIST_FIELDS);
    const rows = (await pipe.exec()) ?? [];
    for (let i = 0; i < page.length; i++) {
      const values = (rows[i]?.[1] ?? []) as Array<string | null>;
      const h: Record<string, string> = {};
      LIST_FIELDS.forEach((f, j) => {
        if (values[j] !== null && values[j] !== undefined) h[f] = values[j];
      });
      const st = parseRunState(h);
      // gone (retention over, not swept yet), another tenant's run under a reused id, or moved to another status
      // since the index was read: not listed
      const listed = st && st.tenant === tenant && (!opts.status || st.status === opts.status);
      if (listed && out.length === opts.limit) return { runs: out, positions, nextCursor: after };
      after = page[i]!;
      scanned++;
      if (listed) {
        positions.push(after);
        out.push(
          toSnapshot(st, { structured: await structured(redis, keys.run(st.id).state, h[STATE_FIELD.structured]) }),
        );
      }
    }
    if (end) return { runs: out, positions, nextCursor: null };
  }
}
