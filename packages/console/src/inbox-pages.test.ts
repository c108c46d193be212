import { describe, expect, it } from 'vitest';
import type { RunListPage } from '@agentloop/client';
import { awaitingApproval } from './inbox-pages.js';

/** `total` pages of `perPage` paused runs, each with one call awaiting approval; counts the pages read. */
function pagesOf(total: number, perPage: number) {
  const seen = { read: 0 };
  async function* pages(): AsyncGenerator<RunListPage> {
    for (let p = 0; p < total; p++) {
      seen.read++;
      const data = Array.from({ length: perPage }, (_, i) => ({
        id: `run_${p}_${i}`,
        pending: [
          { callId: `c${i}`, name: 't', pauseType: 'awaiting_approval' },
          { callId: `w${i}`, name: 't', pauseType: 'awaiting_input' },
        ],
      }));
      yield { data, nextCursor: p + 1 < total ? `c${p + 1}` : null } as unknown as RunListPage;
    }
  }
  return { pages: pages(), seen };
}

describe('the inbox poll reads a bounded number of pages', () => {
  it('stops after maxPages pages of paused runs and says the list is truncated', async () => {
    const { pages, seen } = pagesOf(50, 200);
    const r = await awaitingApproval(pages, { pageSize: 200, maxPages: 5, maxItems: 5000 });
    expect(seen.read).toBe(5);
    expect(r.items).toHaveLength(1000);
    expect(r.truncated).toBe(true);
  });

  it('stops at maxItems calls', async () => {
    const { pages, seen } = pagesOf(50, 200);
    const r = await awaitingApproval(pages, { pageSize: 200, maxPages: 5, maxItems: 500 });
    expect(seen.read).toBe(3);
    expect(r.items).toHaveLength(500);
    expect(r.truncated).toBe(true);
  });

  it('reads every page when there are few, and is not truncated (also when the last page fills the cap exactly)', async () => {
    const few = pagesOf(2, 10);
    expect(await awaitingApproval(few.pages)).toMatchObject({ truncated: false });
    expect(few.seen.read).toBe(2);
    const exact = pagesOf(5, 100);
    const r = await awaitingApproval(exact.pages, { pageSize: 100, maxPages: 5, maxItems: 500 });
    expect(r).toMatchObject({ truncated: false });
    expect(r.items.map((i) => i.call.callId).every((c) => c.startsWith('c'))).toBe(true);
  });
});
