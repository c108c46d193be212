import { useEffect, useMemo, useState } from 'preact/hooks';
import type { ToolInfo } from '@agentloop/client';
import { clientFor, forgetKey, loadConfig, storeKey, storedKey, type ConsoleConfig } from './session.js';
import { useRoute } from './route.js';
import { SignIn } from './sign-in.js';
import { RunsList } from './runs-list.js';
import { RunView } from './run-view.js';
import { Inbox } from './inbox.js';

export function App() {
  const [key, setKey] = useState(storedKey);
  const [tools, setTools] = useState<Map<string, ToolInfo>>(new Map());
  const [config, setConfig] = useState<ConsoleConfig>({ traceUrl: null });
  const route = useRoute();
  const [notice, setNotice] = useState<string | null>(null);
  // the next person starts at the runs list, not on a page of the previous key's tenant
  const signOut = (why: string | null = null) => {
    forgetKey();
    setKey(null);
    setNotice(why);
    location.hash = '#/runs';
  };
  const client = useMemo(
    () => (key ? clientFor(key, () => signOut('The server refused the API key (401): sign in again.')) : null),
    [key],
  );

  useEffect(() => void loadConfig().then(setConfig), []);
  useEffect(() => {
    if (client)
      client.tools.list().then(
        (t) => setTools(new Map(t.map((x) => [x.name, x]))),
        () => {},
      );
  }, [client]);

  if (!client)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(k) => {
          storeKey(k);
          setNotice(null);
          setKey(k);
        }}
      />
    );
  const current = (screen: string) =>
    route.screen === screen || (screen === 'runs' && route.screen === 'run') ? 'page' : undefined;
  return (
    <>
      <a
        class="skip"
        href="#main"
        onClick={(e) => {
          e.preventDefault();
          document.getElementById('main')?.focus();
        }}
      >
        Skip to content
      </a>
      <header>
        <h1>agentloop</h1>
        <nav aria-label="Console">
          <a href="#/runs" aria-current={current('runs')}>
            Runs
          </a>
          <a href="#/inbox" aria-current={current('inbox')}>
            Approvals
          </a>
        </nav>
        <button type="button" onClick={() => signOut()}>
          Sign out
        </button>
      </header>
      <main id="main" tabIndex={-1}>
        {route.screen === 'runs' && <RunsList client={client} toolNames={[...tools.keys()]} />}
        {route.screen === 'run' && (
          <RunView key={route.runId} client={client} runId={route.runId} tools={tools} config={config} />
        )}
        {route.screen === 'inbox' && <Inbox client={client} tools={tools} />}
      </main>
    </>
  );
}
