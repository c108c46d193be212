import { describe, expect, it } from 'vitest';
import { RunRequestSchema, type RunSnapshot } from '@agentloop/protocol';

import { useTestStore } from './test-support/test-store.js';
import { listRuns } from './run-listing.js';
import type { ListCursor } from './run-store-types.js';

describe('listing a tenant’s runs (real Redis)', () => {
  const t = useTestStore('listing');

  const request = RunRequestSchema.parse({ input: 'hi', model: { provider: 'openai', name: 'gpt-4o-mini' } });
  let n = 0;
  const create = async (tenant: string, runId = `run_list_${process.pid}_${n++}`) => {
    await t.store.create({ runId, tenant, request, messages: [{ role: 'user', content: 'hi' }], bodyHash: 'h' });
    await new Promise((r) => setTimeout(r, 2)); // distinct creation times
    return runId;
  };
  /** Retention passed (every key of the run expired) and the sweeper has not removed its index entries yet. */
  const expire = async (runId: string) =>
    void (await t.redis.del(t.store.keys.run(runId).state, t.store.keys.run(runId).messages));
  const everyPage = async (tenant: string, limit: number, status?: string, scanLimit?: number) => {
    const pages: RunSnapshot[][] = [];
    let cursor: ListCursor | null = null;
    do {
      const page: { runs: RunSnapshot[]; nextCursor: ListCursor | null } = await listRuns(
        t.redis,
        t.store.keys,
        tenant,
        { limit, cursor, status },
        scanLimit,
      );
      pages.push(page.runs);
      cursor = page.nextCursor;
    } while (cursor && pages.length < 100);
    return pages;
  };

  it('never lists another tenant’s run that reused the id of one of the tenant’s expired runs', async () => {
    const [a, b] = [`A${Date.now()}`, `B${Date.now()}`];
    const mine = await create(a);
    const reused = await create(a);
    await expire(reused);
    await create(b, reused); // queue intake with the same runId, after retention, before the sweep
    expect((await t.store.load(reused))!.tenant).toBe(b);
    for (const status of [undefined, 'queued']) {
      const page = await t.store.listRuns(a, { limit: 10, status });
      expect(page.runs.map((r) => r.id)).toEqual([mine]);
      expect(page.nextCursor).toBeNull();
    }
    expect((await t.store.listRuns(b, { limit: 10 })).runs.map((r) => r.id)).toEqual([reused]);
  });

  it('fills pages past rows it skips, and its cursors neither repeat nor skip a run', async () => {
    const [a, b] = [`A2${Date.now()}`, `B2${Date.now()}`];
    const mine: string[] = [];
    for (let i = 0; i < 7; i++) {
      mine.push(await create(a));
      // between every two of the tenant's runs: an expired one, and one whose id another tenant took over
      await expire(await create(a));
      const taken = await create(a);
      await expire(taken);
      await create(b, taken);
    }
    const newestFirst = [...mine].reverse();
    for (const limit of [1, 2, 3, 7, 50]) {
      const pages = await everyPage(a, limit);
      expect(pages.flat().map((r) => r.id)).toEqual(newestFirst);
      expect(pages.slice(0, -1).every((p) => p.length === limit)).toBe(true); // full pages while the scan bound is not reached
    }
  });

  it('pages through many runs created in the same millisecond (one score) without losing any', async () => {
    const a = `A4${Date.now()}`;
    const ids: string[] = [];
    for (let i = 0; i < 45; i++) ids.push(await create(a));
    await t.redis.zadd(t.store.keys.tenantRuns(a), ...ids.flatMap((id) => [1_700_000_000_000, id]));
    const byId = [...ids].sort().reverse();
    for (const limit of [1, 4, 50]) expect((await everyPage(a, limit)).flat().map((r) => r.id)).toEqual(byId);
  });

  it('reads a bounded number of rows per page: past the bound it returns fewer runs and a cursor that goes on', async () => {
    const a = `A3${Date.now()}`;
    const mine = [await create(a)];
    for (let i = 0; i < 30; i++) await expire(await create(a));
    mine.push(await create(a));
    const pages = await everyPage(a, 5, undefined, 10);
    expect(pages.flat().map((r) => r.id)).toEqual([...mine].reverse());
    expect(pages.length).toBeGreaterThanOrEqual(4); // 32 rows at most 10 a page
    expect(pages.some((p) => p.length === 0)).toBe(true); // a page of skipped rows only, with a cursor past them
  });
});
