import http from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';

/** Kept-alive connections to model APIs, shared by every client of the process. */
const agents = {
  'http:': new http.Agent({ keepAlive: true, keepAliveMsecs: 15_000 }),
  'https:': new https.Agent({ keepAlive: true, keepAliveMsecs: 15_000 }),
};

function headerRecord(h: RequestInit['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!h) return out;
  if (h instanceof Headers) h.forEach((v, k) => (out[k] = v));
  else if (Array.isArray(h)) for (const [k, v] of h) out[k!.toLowerCase()] = v!;
  else for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k.toLowerCase()] = String(v);
  return out;
}

function bodyBytes(body: RequestInit['body']): Buffer | null | undefined {
  if (body === undefined || body === null) return null;
  if (typeof body === 'string') return Buffer.from(body);
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  return undefined; // streams, forms: not this fetch's job
}

function abortError(signal: AbortSignal): Error {
  const reason = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  return Object.assign(new Error('This operation was aborted'), { name: 'AbortError', cause: reason });
}

/**
 * A `fetch` for the provider SDKs over node:http with kept-alive agents. Global fetch (undici) spends about
 * 0.35 ms per request before its bytes reach the wire here (docs/BENCHMARKS.md) — paid by every model call.
 * Bodies the SDKs send for chat calls (strings, bytes) go this way; anything else falls back to global fetch.
 * The response streams (SSE) through a web ReadableStream, as the SDKs expect.
 */
export const nodeFetch: typeof fetch = async (input, init = {}) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const body = bodyBytes(init.body);
  const proto = url.slice(0, url.indexOf(':') + 1) as 'http:' | 'https:';
  if (body === undefined || !(proto in agents) || !(typeof input === 'string' || input instanceof URL))
    return fetch(input, init);
  return send(url, proto, init.method ?? 'GET', headerRecord(init.headers), body, init.signal ?? undefined);
};

/**
 * One request over node:http. Only what a retry needs is kept while it waits for its answer (the URL as a string,
 * the headers, the body's bytes), not the caller's `init` with its body text and `Headers`: a model call waits
 * seconds, and thousands wait at once (docs/BENCHMARKS.md, "Capacity"). The headers go to node:http as a flat list
 * (the form of `rawHeaders`), Host included: from an object it would keep a dictionary of them per request
 * besides the header block it writes.
 */
function send(
  url: string,
  proto: 'http:' | 'https:',
  method: string,
  record: Record<string, string>,
  body: Buffer | null,
  signal: AbortSignal | undefined,
): Promise<Response> {
  if (signal?.aborted) return Promise.reject(abortError(signal));
  if (body) record['content-length'] = String(body.length);
  const u = new URL(url);
  if (!('host' in record)) record.host = u.host;
  // credentials in the URL, as node:http adds them to an object of headers without an Authorization (not to a list)
  if (u.username && !('authorization' in record))
    record.authorization = `Basic ${Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64')}`;
  // sized once (pushed, it would keep the spare room its growth left: the socket keeps its first request's list)
  const names = Object.keys(record);
  const headers = new Array<string>(2 * names.length);
  names.forEach((k, i) => ((headers[2 * i] = k), (headers[2 * i + 1] = record[k]!)));
  const mod = proto === 'https:' ? https : http;
  const attempt = (retried: boolean) =>
    new Promise<Response>((resolve, reject) => {
      let response: http.IncomingMessage | null = null;
      const req = mod.request(url, { method, headers, agent: agents[proto] }, (res) => {
        response = res;
        const status = res.statusCode ?? 0;
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) {
          if (Array.isArray(v)) for (const x of v) h.append(k, x);
          else if (v !== undefined) h.set(k, v);
        }
        const empty = status === 204 || status === 304 || method === 'HEAD';
        if (empty) res.resume();
        resolve(
          new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), {
            status,
            statusText: res.statusMessage ?? '',
            headers: h,
          }),
        );
      });
      // the body stream ends with the AbortError too (not the socket's own 'aborted')
      const onAbort = () => {
        const err = abortError(signal!);
        response?.destroy(err);
        req.destroy(err);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      // on, not once: a once-listener costs a wrapper and its state per request in flight; a request closes once,
      // and only its first error counts (a listener that stays also keeps a late second error from being thrown)
      let failed = false;
      req.on('close', () => signal?.removeEventListener('abort', onAbort));
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (failed) return;
        failed = true;
        if (signal?.aborted) return reject(abortError(signal));
        // a kept-alive connection the server closed just as it was reused: the request never reached it (Node's
        // documented pattern: retry once on a fresh connection)
        if (!response && !retried && req.reusedSocket && err.code === 'ECONNRESET') return resolve(attempt(true));
        reject(Object.assign(new TypeError('fetch failed'), { cause: err }));
      });
      req.end(body ?? undefined);
    });
  return attempt(false);
}
