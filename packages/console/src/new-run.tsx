import { useState } from 'preact/hooks';
import type { AgentloopClient } from '@agentloop/client';
import { useSubmit } from './use-submit.js';

/** Starts a run: an input, a model and the catalog tools it may call. The server validates the request. */
export function NewRunForm({ client, toolNames }: { client: AgentloopClient; toolNames: string[] }) {
  const [input, setInput] = useState('');
  const [provider, setProvider] = useState('openai');
  const [model, setModel] = useState('gpt-4o-mini');
  const [tools, setTools] = useState<string[]>([]);
  const { busy, error, submit } = useSubmit(async () => {
    const r = await client.runs.create({ input, model: { provider, name: model }, tools } as Parameters<
      AgentloopClient['runs']['create']
    >[0]);
    location.hash = `#/runs/${r.id}`;
  });
  const toggle = (name: string, on: boolean) => setTools((t) => (on ? [...t, name] : t.filter((n) => n !== name)));

  return (
    <details class="card">
      <summary>Start a run</summary>
      <form onSubmit={(e) => void submit(e)} aria-label="Start a run">
        <label for="run-input">Input</label>
        <textarea
          id="run-input"
          rows={3}
          required
          value={input}
          onInput={(e) => setInput((e.target as HTMLTextAreaElement).value)}
        />
        <div class="row wrap">
          <span>
            <label for="run-provider">Provider</label>
            <input
              id="run-provider"
              required
              value={provider}
              onInput={(e) => setProvider((e.target as HTMLInputElement).value)}
            />
          </span>
          <span>
            <label for="run-model">Model</label>
            <input
              id="run-model"
              required
              value={model}
              onInput={(e) => setModel((e.target as HTMLInputElement).value)}
            />
          </span>
        </div>
        {toolNames.length > 0 && (
          <fieldset>
            <legend>Tools</legend>
            <div class="row wrap">
              {toolNames.map((n) => (
                <label key={n} class="check">
                  <input
                    type="checkbox"
                    checked={tools.includes(n)}
                    onChange={(e) => toggle(n, (e.target as HTMLInputElement).checked)}
                  />{' '}
                  {n}
                </label>
              ))}
            </div>
          </fieldset>
        )}
        <button type="submit" class="primary" disabled={busy}>
          Start
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </details>
  );
}
