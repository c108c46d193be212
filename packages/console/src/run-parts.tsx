import type { EventEnvelope } from '@agentloop/client';
import { eventSummary, type CallView, type Turn } from './run-state.js';

const json = (v: unknown) => JSON.stringify(v, null, 2);

/** The model's turns as they stream: reasoning (folded) and text. */
export function Turns({ turns, live }: { turns: Turn[]; live: boolean }) {
  return (
    <section aria-labelledby="turns-h">
      <h3 id="turns-h">Conversation</h3>
      {turns.length === 0 && <p class="muted">{live ? 'Waiting for the model…' : 'No text was streamed.'}</p>}
      <div aria-live="polite" data-testid="turns">
        {turns.map((t) => (
          <article key={t.iteration} class="turn" aria-label={`Iteration ${t.iteration}`}>
            {t.reasoning && (
              <details class="reasoning">
                <summary>Reasoning (iteration {t.iteration})</summary>
                <p class="stream">{t.reasoning}</p>
              </details>
            )}
            {t.text && <p class="stream">{t.text}</p>}
          </article>
        ))}
      </div>
    </section>
  );
}

/** Every tool call of the run, with its latest status and result. */
export function ToolCalls({ calls }: { calls: CallView[] }) {
  if (calls.length === 0) return null;
  return (
    <section aria-labelledby="calls-h">
      <h3 id="calls-h">Tool calls</h3>
      <ul class="calls">
        {calls.map((c) => (
          <li key={c.callId} class="card" data-call-id={c.callId}>
            <div class="row">
              <code>{c.name}</code> <span class={`status status-${c.status}`}>{c.status}</span>
              {c.durationMs !== undefined && <span class="muted">{Math.round(c.durationMs)} ms</span>}
            </div>
            <details>
              <summary>Arguments{c.originalArguments !== undefined ? ' (edited by a reviewer)' : ''}</summary>
              <pre class="json">{json(c.arguments)}</pre>
              {c.originalArguments !== undefined && (
                <>
                  <p class="muted">As the model proposed them:</p>
                  <pre class="json">{json(c.originalArguments)}</pre>
                </>
              )}
            </details>
            {c.result !== undefined && (
              <details>
                <summary>Result</summary>
                <pre class="json">{json(c.result)}</pre>
              </details>
            )}
            {c.error && (
              <p class="error">
                {c.error.code}: {c.error.message}
              </p>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** The run's events in order (open once the run ended). */
export function EventHistory({ events, open }: { events: EventEnvelope[]; open: boolean }) {
  return (
    <section aria-labelledby="history-h">
      <details open={open}>
        <summary>
          <h3 id="history-h" class="inline">
            Event history ({events.length})
          </h3>
        </summary>
        <div class="scroll">
          <table class="events">
            <caption class="sr-only">The run's events, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Time</th>
                <th scope="col">Type</th>
                <th scope="col">Data</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.seq}>
                  <td>{e.seq}</td>
                  <td>
                    <time dateTime={e.at}>{new Date(e.at).toLocaleTimeString()}</time>
                  </td>
                  <td>
                    <code>{e.type}</code>
                  </td>
                  <td class="summary">{eventSummary(e)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </section>
  );
}
