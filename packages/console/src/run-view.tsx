import { useEffect, useState } from 'preact/hooks';
import type { AgentloopClient, RunSnapshot, ToolInfo } from '@agentloop/client';
import { SNAPSHOT_EVENTS, applyEvent, emptyRunEvents, type RunEvents } from './run-state.js';
import { ApprovalCard } from './approval.js';
import { EventHistory, ToolCalls, Turns } from './run-parts.js';
import { errorText } from './poll.js';
import type { ConsoleConfig } from './session.js';

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * The run's trace id (SPEC §8), shown only when the snapshot carries a `traceId` (W3C: 32 hex digits); linked when the
 * api has AGENTLOOP_CONSOLE_TRACE_URL.
 */
export const traceIdOf = (snap: RunSnapshot): string | null => {
  const t = snap.traceId;
  return typeof t === 'string' && /^[0-9a-f]{32}$/.test(t) ? t : null;
};

interface Props {
  client: AgentloopClient;
  runId: string;
  tools: Map<string, ToolInfo>;
  config: ConsoleConfig;
}

/** One run, live: its snapshot, its streaming turns and tool calls, approvals inline, cancel, its event history. */
export function RunView({ client, runId, tools, config }: Props) {
  const [snap, setSnap] = useState<RunSnapshot | null>(null);
  const [ev, setEv] = useState<RunEvents>(emptyRunEvents);
  const [error, setError] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [reload, setReload] = useState(0);

  useEffect(() => {
    const ac = new AbortController();
    client.runs.get(runId, { signal: ac.signal }).then(setSnap, (e) => !ac.signal.aborted && setError(errorText(e)));
    return () => ac.abort();
  }, [runId, reload]);

  useEffect(() => {
    const ac = new AbortController();
    setEv(emptyRunEvents());
    (async () => {
      for await (const e of client.runs.events(runId, { signal: ac.signal })) {
        setEv((s) => applyEvent(s, e));
        if (SNAPSHOT_EVENTS.has(e.type)) setReload((n) => n + 1);
      }
    })().catch((e) => !ac.signal.aborted && setError(errorText(e)));
    return () => ac.abort();
  }, [runId]);

  const cancel = async () => {
    try {
      const r = await client.runs.cancel(runId);
      setNotice(`Cancel requested: ${r.status}`);
      setReload((n) => n + 1);
    } catch (e) {
      setError(errorText(e));
    }
  };

  if (error && !snap)
    return (
      <p role="alert" class="error">
        {error}
      </p>
    );
  if (!snap) return <p aria-busy="true">Loading run {runId}…</p>;
  const ended = TERMINAL.has(snap.status);
  const traceId = traceIdOf(snap);
  return (
    <section aria-labelledby="run-h">
      <h2 id="run-h">
        Run <code>{snap.id}</code>
      </h2>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <span class={`status status-${snap.status}`} data-testid="run-status" role="status" aria-live="polite">
            {snap.status}
          </span>
          {snap.stopReason && ` (${snap.stopReason})`}
        </dd>
        <dt>Model</dt>
        <dd>
          {snap.model.provider}/{snap.model.name}
        </dd>
        <dt>Iteration</dt>
        <dd>{snap.iteration}</dd>
        <dt>Usage</dt>
        <dd>
          {snap.usage.totalTokens} tokens, {snap.usage.toolCalls} tool calls, ${snap.usage.costUsd.toFixed(4)}
        </dd>
        <dt>Trace</dt>
        <dd>
          {traceId ? (
            config.traceUrl ? (
              <a href={config.traceUrl.replace('{traceId}', traceId)} rel="noreferrer noopener" target="_blank">
                {traceId}
              </a>
            ) : (
              <code>{traceId}</code>
            )
          ) : (
            <span class="muted">none recorded</span>
          )}
        </dd>
      </dl>
      {!ended && (
        <div class="actions">
          <button type="button" class="danger" onClick={() => void cancel()}>
            Cancel run
          </button>
        </div>
      )}
      {notice && <p role="status">{notice}</p>}
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {snap.error && (
        <p class="error">
          Failed: {snap.error.code} — {snap.error.message}
        </p>
      )}
      {snap.pending.length > 0 && snap.status === 'paused' && (
        <section aria-labelledby="pending-h">
          <h3 id="pending-h">Waiting for a decision</h3>
          {snap.pending.map((c) => (
            <ApprovalCard
              key={c.callId}
              client={client}
              runId={runId}
              call={c}
              tool={tools.get(c.name)}
              onDecided={() => setReload((n) => n + 1)}
            />
          ))}
        </section>
      )}
      <Turns turns={ev.turns} live={!ended} />
      <ToolCalls calls={ev.calls} />
      {snap.output !== null && ended && (
        <section aria-labelledby="output-h">
          <h3 id="output-h">Output</h3>
          <pre class="output" data-testid="run-output">
            {snap.output}
          </pre>
        </section>
      )}
      <EventHistory events={ev.events} open={ended} />
    </section>
  );
}
