import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { REPO_ROOT } from './paths.js';

/** The OpenAPI 3.0 document of the CRM below ($refs, path/query/header/body parameters, a circular schema). */
export const CRM_OPENAPI_DOC = path.join(REPO_ROOT, 'packages/testing/fixtures/openapi/crm.yaml');

export interface CrmRequest {
  method: string;
  /** The request target as it arrived (raw: percent-encoding kept). */
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

export interface CrmApi {
  /** `http://127.0.0.1:<port>/api`: the base URL of an entry. */
  baseUrl: string;
  port: number;
  requests: CrmRequest[];
  close(): Promise<void>;
}

const json = (res: http.ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/**
 * A real HTTP server for crm.yaml's operations, on loopback, recording every request. `/api/customers/missing` is a
 * 404, `/api/customers/flaky` a 503, `/api/customers/echo-auth` answers with the Authorization header it got,
 * `slow` never answers, `redirect-home` redirects there, `redirect-away` to another loopback host,
 * `/api/admin` is what a path traversal would reach (never called by a correct client). The document itself is
 * served at `/openapi.yaml`.
 */
export async function startCrmApi(): Promise<CrmApi> {
  const document = readFileSync(CRM_OPENAPI_DOC, 'utf8');
  const requests: CrmRequest[] = [];
  let port = 0;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = req.url ?? '';
      requests.push({ method: req.method ?? '', url, headers: req.headers, body });
      const u = new URL(url, 'http://crm');
      const seg = u.pathname.split('/').slice(1); // raw segments
      if (u.pathname === '/openapi.yaml')
        return res.writeHead(200, { 'content-type': 'application/yaml' }).end(document);
      if (seg[0] !== 'api') return json(res, 404, { error: 'not found' });
      if (seg[1] === 'admin') return json(res, 200, { admin: 'secrets' });
      if (seg[1] !== 'customers') return json(res, 404, { error: 'not found' });
      if (seg.length === 2)
        return json(res, 200, { tags: u.searchParams.getAll('tag'), limit: Number(u.searchParams.get('limit')) });
      const id = decodeURIComponent(seg[2]!);
      if (id === 'missing') return json(res, 404, { error: `no customer ${id}` });
      if (id === 'flaky') return json(res, 503, { error: 'try again later' });
      if (id === 'slow') return; // never answers (closed with the server)
      if (id === 'redirect-home') return res.writeHead(302, { location: '/api/customers/echo-auth' }).end();
      if (id === 'redirect-away') return res.writeHead(302, { location: `http://127.0.0.2:${port}/api/admin` }).end();
      if (id === 'echo-auth') return json(res, 200, { authorization: req.headers.authorization ?? null });
      if (seg[3] === 'summary')
        return res.writeHead(200, { 'content-type': 'text/plain' }).end(`${id}: a good customer`);
      if (seg[3] === 'notes' && req.method === 'POST')
        return json(res, 201, { id: 7, customerId: id, ...(JSON.parse(body || '{}') as object) });
      return json(res, 200, {
        id,
        name: `Customer ${id}`,
        expand: u.searchParams.get('expand'),
        trace: req.headers['x-trace-id'] ?? null,
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/api`,
    port,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}
