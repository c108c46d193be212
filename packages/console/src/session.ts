import { AgentloopClient } from '@agentloop/client';

/** The API key lives in this tab's sessionStorage only: never in a URL, a cookie or localStorage. */
const KEY = 'agentloop.apiKey';

export const storedKey = (): string | null => sessionStorage.getItem(KEY);
export const storeKey = (key: string): void => sessionStorage.setItem(KEY, key);
export const forgetKey = (): void => sessionStorage.removeItem(KEY);

/**
 * A client of the api that serves this page (same origin): the key goes out only as `Authorization: Bearer`.
 * `onUnauthorized`: the api refused the key (revoked, or the server's keys changed).
 */
export const clientFor = (apiKey: string, onUnauthorized?: () => void): AgentloopClient =>
  new AgentloopClient({
    baseUrl: location.origin,
    apiKey,
    fetch: async (input, init) => {
      const res = await fetch(input, init);
      if (res.status === 401) onUnauthorized?.();
      return res;
    },
  });

/** What the api tells the console (GET /console/config.json): where a trace id links to. */
export interface ConsoleConfig {
  /** A URL with `{traceId}` in it (AGENTLOOP_CONSOLE_TRACE_URL), or null. */
  traceUrl: string | null;
}

export async function loadConfig(): Promise<ConsoleConfig> {
  try {
    const res = await fetch(new URL('config.json', location.href), { credentials: 'omit' });
    const body = (await res.json()) as { traceUrl?: unknown };
    return {
      traceUrl: typeof body.traceUrl === 'string' && body.traceUrl.includes('{traceId}') ? body.traceUrl : null,
    };
  } catch {
    return { traceUrl: null };
  }
}
