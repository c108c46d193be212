import type { NextFunction, Request, Response } from 'express';

const ALLOW_METHODS = 'GET, POST';
/** What the API reads from a request: the key, the body's type, idempotency, and where an event stream resumes. */
const ALLOW_HEADERS = 'Authorization, Content-Type, Idempotency-Key, Last-Event-ID';
/** Response headers a browser app may read besides the CORS-safelisted ones: when to retry after a 429. */
const EXPOSE_HEADERS = 'Retry-After';
/** How long a browser may cache a preflight's answer (seconds). */
const PREFLIGHT_MAX_AGE_S = '600';

/**
 * CORS (AGENTLOOP_CORS_ORIGINS) for the listed origins only: a request whose `Origin` is listed gets it echoed back
 * — on every response, errors and event streams included, so the app can read a 401 or a 429 — and a preflight
 * (OPTIONS with Access-Control-Request-Method) is answered here, before authentication: browsers send it without the
 * Authorization header. Any other origin gets no CORS header, so the browser keeps its app out. Every response
 * varies by Origin, so no cache serves one origin's answer to another.
 */
export function corsMiddleware(origins: readonly string[]) {
  const listed = new Set(origins);
  return (req: Request, res: Response, next: NextFunction): void => {
    res.vary('Origin');
    const origin = req.get('origin');
    const allowed = origin !== undefined && listed.has(origin);
    const preflight =
      req.method === 'OPTIONS' && origin !== undefined && req.get('access-control-request-method') !== undefined;
    if (!preflight) {
      if (allowed) res.set({ 'access-control-allow-origin': origin, 'access-control-expose-headers': EXPOSE_HEADERS });
      return next();
    }
    if (allowed)
      res.set({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': ALLOW_METHODS,
        'access-control-allow-headers': ALLOW_HEADERS,
        'access-control-max-age': PREFLIGHT_MAX_AGE_S,
      });
    res.status(204).end();
  };
}
