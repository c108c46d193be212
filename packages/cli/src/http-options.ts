/** Where the CLI finds the api role: --url / AGENTLOOP_URL, --key / AGENTLOOP_API_KEY. */
export const HTTP_OPTIONS = {
  url: { type: 'string', default: process.env.AGENTLOOP_URL ?? 'http://127.0.0.1:8080' },
  key: { type: 'string', default: process.env.AGENTLOOP_API_KEY },
} as const;

export async function api(url: string, key: string | undefined, method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (key) headers.authorization = `Bearer ${key}`;
  const res = await fetch(`${url}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json };
}

export function describeError(r: { status: number; json: any }): string {
  const e = r.json?.error;
  return `HTTP ${r.status} ${e?.code ?? ''}: ${e?.message ?? ''}${e?.details ? `\n${JSON.stringify(e.details, null, 2)}` : ''}`;
}
