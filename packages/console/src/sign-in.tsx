import { useState } from 'preact/hooks';
import { clientFor } from './session.js';
import { useSubmit } from './use-submit.js';

/** Asks for an API key and checks it with one request; it is then kept in this tab's sessionStorage only. */
export function SignIn({ onSignedIn, notice }: { onSignedIn: (key: string) => void; notice: string | null }) {
  const [key, setKey] = useState('');
  const { busy, error, submit } = useSubmit(async () => {
    await clientFor(key.trim()).runs.list({ limit: 1 }).next();
    onSignedIn(key.trim());
  });
  return (
    <main id="main" class="signin">
      <h1>agentloop console</h1>
      {notice && (
        <p role="alert" class="error">
          {notice}
        </p>
      )}
      <form onSubmit={(e) => void submit(e)} aria-label="Sign in" method="post" action="#">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="off"
          required
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        <p class="muted">Kept in this browser tab only (session storage) and sent as an Authorization header.</p>
        <button type="submit" class="primary" disabled={busy || key.trim() === ''}>
          Sign in
        </button>
        {error && (
          <p role="alert" class="error">
            {error}
          </p>
        )}
      </form>
    </main>
  );
}
