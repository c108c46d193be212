import { useEffect, useState } from 'preact/hooks';

/** The screens, addressed by the URL's fragment (`#/runs`, `#/runs/<id>`, `#/inbox`): never a key in it. */
export type Route = { screen: 'runs' } | { screen: 'run'; runId: string } | { screen: 'inbox' };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '');
  const run = /^runs\/([A-Za-z0-9_-]{1,64})$/.exec(path);
  if (run) return { screen: 'run', runId: run[1]! };
  if (path === 'inbox') return { screen: 'inbox' };
  return { screen: 'runs' };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const on = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', on);
    return () => removeEventListener('hashchange', on);
  }, []);
  return route;
}
