import { useEffect, useRef } from 'preact/hooks';

/**
 * Calls `fn` now and then every `ms` while the component is mounted (the API has no tenant-wide event stream: the
 * runs list and the inbox ask again). One call at a time; `deps` restart it.
 */
export function usePoll(fn: (signal: AbortSignal) => Promise<void>, ms: number, deps: unknown[]): void {
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => {
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const tick = async () => {
      try {
        await latest.current(ac.signal);
      } catch {}
      if (!ac.signal.aborted) timer = setTimeout(tick, ms);
    };
    void tick();
    return () => {
      ac.abort();
      clearTimeout(timer);
    };
  }, deps);
}

/** The message of a refusal or failure, with the server's details when it gave any (a 400's issues). */
export function errorText(err: unknown): string {
  const e = err as { message?: string; status?: number; details?: unknown };
  const issues = Array.isArray(e.details)
    ? e.details
        .map(
          (d: { path?: unknown[]; instancePath?: string; message?: string }) =>
            `${(d.path ?? []).join('.') || d.instancePath || '(arguments)'}: ${d.message ?? ''}`,
        )
        .join('; ')
    : '';
  return `${e.status ? `${e.status} ` : ''}${e.message ?? String(err)}${issues ? ` — ${issues}` : ''}`;
}
