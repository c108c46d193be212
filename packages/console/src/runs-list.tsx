import { useState } from 'preact/hooks';
import type { AgentloopClient, RunSnapshot, RunStatus } from '@agentloop/client';
import { errorText, usePoll } from './poll.js';
import { NewRunForm } from './new-run.js';

const STATUSES: RunStatus[] = ['queued', 'running', 'paused', 'completed', 'failed', 'cancelled'];
/** How often the list asks again (the API has no tenant-wide stream). */
export const LIST_POLL_MS = 2000;

/** The tenant's runs, newest first, filtered by status, refreshed every LIST_POLL_MS. */
export function RunsList({ client, toolNames }: { client: AgentloopClient; toolNames: string[] }) {
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [runs, setRuns] = useState<RunSnapshot[] | null>(null);
  const [error, setError] = useState<string | null>(null);

  usePoll(
    async (signal) => {
      try {
        const pages = client.runs.list({ ...(status ? { status } : {}), limit: 100, signal });
        const first = await pages.next();
        setRuns(first.done ? [] : first.value.data);
        setError(null);
      } catch (e) {
        if (!signal.aborted) setError(errorText(e));
      }
    },
    LIST_POLL_MS,
    [status],
  );

  return (
    <section aria-labelledby="runs-h">
      <h2 id="runs-h">Runs</h2>
      <NewRunForm client={client} toolNames={toolNames} />
      <div class="toolbar">
        <label for="status-filter">Status</label>
        <select
          id="status-filter"
          value={status}
          onChange={(e) => setStatus((e.target as HTMLSelectElement).value as RunStatus | '')}
        >
          <option value="">all</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <span class="muted" aria-live="polite">
          {runs ? `${runs.length} run${runs.length === 1 ? '' : 's'}` : 'loading…'}
        </span>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {runs && runs.length === 0 && <p class="muted">No runs{status ? ` with status ${status}` : ''}.</p>}
      {runs && runs.length > 0 && (
        <div class="scroll">
          <table class="runs">
            <caption class="sr-only">Runs, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Run</th>
                <th scope="col">Status</th>
                <th scope="col" class="wide">
                  Model
                </th>
                <th scope="col" class="wide">
                  Updated
                </th>
                <th scope="col">Pending</th>
              </tr>
            </thead>
            <tbody>
              {runs.map((r) => (
                <tr key={r.id} data-run-id={r.id}>
                  <td>
                    <a href={`#/runs/${r.id}`}>
                      <code>{r.id}</code>
                    </a>
                  </td>
                  <td>
                    <span class={`status status-${r.status}`}>{r.status}</span>
                  </td>
                  <td class="wide">{r.model.name}</td>
                  <td class="wide">
                    <time dateTime={r.updatedAt}>{new Date(r.updatedAt).toLocaleString()}</time>
                  </td>
                  <td>{r.pending.length || ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
