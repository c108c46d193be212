/** A non-2xx answer of the API, with its SPEC §2 error body. */
export class AgentloopError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'AgentloopError';
  }
}

/** The AgentloopError of a non-2xx response (its body read; a body that is not the SPEC's error shape still gives one). */
export async function errorOf(res: Response): Promise<AgentloopError> {
  const text = await res.text().catch(() => '');
  let err: { code?: string; message?: string; details?: unknown } = {};
  try {
    err = (JSON.parse(text) as { error?: typeof err }).error ?? {};
  } catch {}
  const retry = Number(res.headers.get('retry-after'));
  return new AgentloopError(res.status, err.code ?? 'http_error', err.message ?? `HTTP ${res.status}`, err.details, Number.isFinite(retry) && retry > 0 ? retry : undefined);
}
