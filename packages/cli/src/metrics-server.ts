import http from 'node:http';
import { readyzAnswer } from '@agentloop/runtime';

/**
 * The HTTP server of a process without the api role (`AGENTLOOP_METRICS_PORT`): `/metrics`, `/healthz` (liveness:
 * the process answers) and `/readyz` (readiness, the api's check: 503 `{status:"not_ready",reason}` while it fails).
 */
export function createMetricsServer(o: {
  metricsText: () => Promise<string>;
  contentType?: string;
  ready: () => Promise<string | null>;
}): http.Server {
  return http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/metrics') {
      o.metricsText().then(
        (t) => res.writeHead(200, { 'content-type': o.contentType ?? 'text/plain; version=0.0.4' }).end(t),
        () => res.writeHead(500).end(),
      );
    } else if (path === '/healthz') {
      json(res, 200, { status: 'ok' });
    } else if (path === '/readyz') {
      void o
        .ready()
        .catch((e: unknown) => String(e))
        .then((reason) => {
          const answer = readyzAnswer(reason);
          json(res, answer.status, answer.body);
        });
    } else res.writeHead(404).end();
  });
}

const json = (res: http.ServerResponse, status: number, body: unknown) =>
  void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
