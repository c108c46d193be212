import { useState } from 'preact/hooks';
import type { AgentloopClient, DecisionInput, ToolInfo } from '@agentloop/client';
import { ApprovalCard } from './approval.js';
import { INBOX_LIMITS, awaitingApproval, type InboxItem } from './inbox-pages.js';
import { errorText, usePoll } from './poll.js';
import { LIST_POLL_MS } from './runs-list.js';

type Item = InboxItem;
const keyOf = (i: Item) => `${i.run.id}/${i.call.callId}`;

/** Every call waiting for a person across the tenant's paused runs: who, what, when; approve, edit or deny, in bulk too. */
export function Inbox({ client, tools }: { client: AgentloopClient; tools: Map<string, ToolInfo> }) {
  const [items, setItems] = useState<Item[] | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [editing, setEditing] = useState<string | null>(null);
  const [reason, setReason] = useState('');
  const [message, setMessage] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  const [truncated, setTruncated] = useState(false);

  usePoll(
    async (signal) => {
      const { items: found, truncated: more } = await awaitingApproval(
        client.runs.list({ status: 'paused', limit: INBOX_LIMITS.pageSize, signal }),
      );
      setItems(found);
      setTruncated(more);
      const live = new Set(found.map(keyOf));
      setSelected((s) => new Set([...s].filter((k) => live.has(k))));
    },
    LIST_POLL_MS,
    [tick],
  );

  const refresh = () => setTick((n) => n + 1);
  const toggle = (k: string, on: boolean) =>
    setSelected((s) => {
      const n = new Set(s);
      if (on) n.add(k);
      else n.delete(k);
      return n;
    });

  /** One decisions request per run, each applied whole; a run that moved on (409) is reported, the rest still go. */
  const bulk = async (action: 'approve' | 'deny') => {
    const byRun = new Map<string, DecisionInput[]>();
    for (const i of items ?? []) {
      if (!selected.has(keyOf(i))) continue;
      const d: DecisionInput =
        action === 'approve'
          ? { callId: i.call.callId, action }
          : { callId: i.call.callId, action, ...(reason ? { reason } : {}) };
      byRun.set(i.run.id, [...(byRun.get(i.run.id) ?? []), d]);
    }
    const failed: string[] = [];
    let done = 0;
    for (const [runId, decisions] of byRun) {
      try {
        await client.runs.decide(runId, decisions);
        done += decisions.length;
      } catch (e) {
        failed.push(`${runId}: ${errorText(e)}`);
      }
    }
    setMessage(`${action === 'approve' ? 'Approved' : 'Denied'} ${done} call${done === 1 ? '' : 's'}.`);
    setError(failed.length ? failed.join('\n') : null);
    setSelected(new Set());
    refresh();
  };

  const all = items ?? [];
  const allSelected = all.length > 0 && all.every((i) => selected.has(keyOf(i)));
  return (
    <section aria-labelledby="inbox-h">
      <h2 id="inbox-h">Approvals inbox</h2>
      <p class="muted" aria-live="polite" data-testid="inbox-count">
        {items === null
          ? 'loading…'
          : `${all.length}${truncated ? '+' : ''} call${all.length === 1 ? '' : 's'} waiting`}
      </p>
      {truncated && (
        <p class="muted" data-testid="inbox-truncated">
          More calls are waiting than shown: these are from the {INBOX_LIMITS.pageSize * INBOX_LIMITS.maxPages} newest
          paused runs (at most {INBOX_LIMITS.maxItems} calls). Decide them to see the rest.
        </p>
      )}
      {all.length > 0 && (
        <div class="toolbar" role="group" aria-label="Bulk decisions">
          <label class="check">
            <input
              type="checkbox"
              checked={allSelected}
              onChange={(e) =>
                setSelected((e.target as HTMLInputElement).checked ? new Set(all.map(keyOf)) : new Set())
              }
            />{' '}
            Select all
          </label>
          <button type="button" class="primary" disabled={selected.size === 0} onClick={() => void bulk('approve')}>
            Approve selected ({selected.size})
          </button>
          <label for="bulk-reason" class="sr-only">
            Reason for denying the selected calls
          </label>
          <input
            id="bulk-reason"
            type="text"
            placeholder="reason for denying"
            value={reason}
            onInput={(e) => setReason((e.target as HTMLInputElement).value)}
          />
          <button type="button" class="danger" disabled={selected.size === 0} onClick={() => void bulk('deny')}>
            Deny selected ({selected.size})
          </button>
        </div>
      )}
      {message && <p role="status">{message}</p>}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      <ul class="inbox">
        {all.map((i) => {
          const k = keyOf(i);
          return (
            <li key={k} class="card" data-run-id={i.run.id} data-call-id={i.call.callId}>
              <div class="row wrap">
                <label class="check">
                  <input
                    type="checkbox"
                    checked={selected.has(k)}
                    onChange={(e) => toggle(k, (e.target as HTMLInputElement).checked)}
                  />{' '}
                  <span class="sr-only">Select</span> <code>{i.call.name}</code>
                </label>
                <span>
                  run{' '}
                  <a href={`#/runs/${i.run.id}`}>
                    <code>{i.run.id}</code>
                  </a>
                </span>
                <span class="muted">
                  paused <time dateTime={i.run.updatedAt}>{new Date(i.run.updatedAt).toLocaleString()}</time>
                </span>
              </div>
              {Object.keys(i.run.metadata).length > 0 && (
                <p class="muted">
                  metadata <code>{JSON.stringify(i.run.metadata)}</code>
                </p>
              )}
              <pre class="json">{JSON.stringify(i.call.arguments)}</pre>
              <button type="button" aria-expanded={editing === k} onClick={() => setEditing(editing === k ? null : k)}>
                {editing === k ? 'Close' : 'Review, edit or deny'}
              </button>
              {editing === k && (
                <ApprovalCard
                  client={client}
                  runId={i.run.id}
                  call={i.call}
                  tool={tools.get(i.call.name)}
                  onDecided={() => {
                    setEditing(null);
                    refresh();
                  }}
                />
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}
