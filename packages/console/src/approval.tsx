import { useMemo, useState } from 'preact/hooks';
import type { AgentloopClient, PendingCall, ToolInfo } from '@agentloop/client';
import { parseArguments, schemaProblems } from './schema-check.js';
import { errorText } from './poll.js';

interface Props {
  client: AgentloopClient;
  runId: string;
  call: PendingCall;
  tool: ToolInfo | undefined;
  /** After a decision the server accepted. */
  onDecided: () => void;
}

const pretty = (v: unknown) => JSON.stringify(v ?? {}, null, 2);

/** One paused call: its arguments editable as JSON, checked against the tool's schema; approve or deny. */
export function ApprovalCard({ client, runId, call, tool, onDecided }: Props) {
  const original = useMemo(() => pretty(call.arguments), [call.callId]);
  const [text, setText] = useState(original);
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [serverError, setServerError] = useState<string | null>(null);
  const parsed = parseArguments(text);
  // a client tool's schema is the run's own (not in the catalog): the server checks it
  const problems = parsed.ok ? (tool ? schemaProblems(tool.parameters, parsed.value) : []) : [parsed.error];
  const edited = text !== original;
  const base = `call-${call.callId.replace(/[^A-Za-z0-9_-]/g, '_')}`;

  const decide = async (approve: boolean) => {
    setBusy(true);
    setServerError(null);
    try {
      if (approve)
        await client.runs.approve(runId, call.callId, edited && parsed.ok ? { arguments: parsed.value } : {});
      else await client.runs.deny(runId, call.callId, reason ? { reason } : {});
      onDecided();
    } catch (e) {
      setServerError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  if (call.pauseType !== 'awaiting_approval')
    return (
      <article class="card pending" aria-labelledby={`${base}-h`}>
        <h4 id={`${base}-h`}>
          {call.name} <span class="muted">waits for the client's result</span>
        </h4>
        <pre class="json">{pretty(call.arguments)}</pre>
        <p class="muted">A client tool: the application that started the run submits its result.</p>
      </article>
    );

  return (
    <article class="card pending" aria-labelledby={`${base}-h`} data-call-id={call.callId}>
      <h4 id={`${base}-h`}>
        Approve <code>{call.name}</code>?{' '}
        {tool && <span class={`badge side-${tool.sideEffect}`}>{tool.sideEffect}</span>}
      </h4>
      {tool?.description && <p class="muted">{tool.description}</p>}
      <label for={`${base}-args`}>Arguments (JSON{edited ? ', edited' : ''})</label>
      <textarea
        id={`${base}-args`}
        class="json"
        rows={Math.min(12, text.split('\n').length + 1)}
        spellcheck={false}
        value={text}
        aria-invalid={problems.length > 0}
        aria-describedby={`${base}-problems`}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
      />
      <div id={`${base}-problems`} aria-live="polite">
        {problems.length > 0 && (
          <ul class="problems" aria-label="Problems with the arguments">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
      </div>
      <label for={`${base}-reason`}>Reason if denied (the model sees it)</label>
      <input
        id={`${base}-reason`}
        type="text"
        value={reason}
        onInput={(e) => setReason((e.target as HTMLInputElement).value)}
      />
      <div class="actions">
        <button type="button" class="primary" disabled={busy || problems.length > 0} onClick={() => void decide(true)}>
          {edited ? 'Approve with edits' : 'Approve'}
        </button>
        <button type="button" class="danger" disabled={busy} onClick={() => void decide(false)}>
          Deny
        </button>
        {edited && (
          <button type="button" disabled={busy} onClick={() => setText(original)}>
            Reset arguments
          </button>
        )}
      </div>
      {serverError && (
        <p role="alert" class="error">
          The server refused: {serverError}
        </p>
      )}
    </article>
  );
}
