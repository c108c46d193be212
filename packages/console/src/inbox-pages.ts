import type { PendingCall, RunListPage, RunSnapshot } from '@agentloop/client';

export interface InboxItem {
  run: RunSnapshot;
  call: PendingCall;
}

/** What one poll of the inbox reads at most: pages of paused runs (newest first), and calls kept. */
export const INBOX_LIMITS = { pageSize: 200, maxPages: 5, maxItems: 500 };

/**
 * The calls awaiting approval on the first pages of paused runs: at most `maxPages` pages and `maxItems` calls, so a
 * poll every 2 s never reads every paused run of the tenant. `truncated`: more paused runs or calls were left unread.
 */
export async function awaitingApproval(
  pages: AsyncIterable<RunListPage>,
  limits = INBOX_LIMITS,
): Promise<{ items: InboxItem[]; truncated: boolean }> {
  const items: InboxItem[] = [];
  let read = 0;
  for await (const page of pages) {
    read++;
    for (const run of page.data)
      for (const call of run.pending) if (call.pauseType === 'awaiting_approval') items.push({ run, call });
    if (items.length >= limits.maxItems || read >= limits.maxPages)
      return { items: items.slice(0, limits.maxItems), truncated: items.length > limits.maxItems || !!page.nextCursor };
  }
  return { items, truncated: false };
}
