import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, resolveGuarded } from '@agentloop/runtime';
import { ToolFailure } from './tool-definition.js';

export interface GuardedRequestOptions {
  method?: string;
  /** Headers of each hop (a redirect to another origin can leave the operator's credentials out). */
  headers?: (url: URL) => Record<string, string>;
  body?: string;
  maxBytes?: number;
  /** Redirects followed, each hop checked again [5]; past them the request fails. */
  maxRedirects?: number;
  /** false: a 3xx is the answer (a request with a body is not sent again elsewhere). */
  followRedirects?: boolean;
  /** A blocked address let through for this hop (the operator's allowance, or a test's loopback). */
  allowAddress?: (address: string, url: URL) => boolean;
}

export interface GuardedResponse {
  status: number;
  contentType: string;
  body: string;
  truncated?: true;
}

/**
 * One HTTP request to a URL a tenant or a model chose, under the SSRF guard (SPEC §6 `http_get`): http(s) only, no
 * credentials in the URL, every hop resolved and checked, and connected to at exactly the checked address; the body
 * read up to `maxBytes`. A refusal is `blocked_url`; a request that fails on the way is a retryable `tool_error`.
 */
export async function guardedRequest(
  rawUrl: string,
  signal: AbortSignal,
  opts: GuardedRequestOptions = {},
): Promise<GuardedResponse> {
  const maxBytes = opts.maxBytes ?? 1_000_000;
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new ToolFailure('invalid_arguments', `not a valid URL: ${rawUrl.slice(0, 200)}`);
  }
  for (let hop = 0; hop <= (opts.maxRedirects ?? 5); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new ToolFailure('blocked_url', `refused: only http and https URLs are allowed (${url.protocol})`);
    if (url.username || url.password)
      throw new ToolFailure('blocked_url', 'refused: URLs with credentials are not allowed');
    const at = url;
    const guard = await resolveGuarded(at.hostname, {
      allowAddress: opts.allowAddress && ((address) => opts.allowAddress!(address, at)),
    });
    if (!guard.ok) throw new ToolFailure(guard.reason === 'blocked' ? 'blocked_url' : 'tool_error', guard.message);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const lib = at.protocol === 'https:' ? https : http;
      const req = lib.request(at, {
        method: opts.method ?? 'GET',
        signal,
        headers: {
          ...opts.headers?.(at),
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
        },
        lookup: pinnedLookup(guard.target),
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end(opts.body);
    }).catch((e: Error) => {
      if (e instanceof ToolFailure || signal.aborted) throw e;
      throw new ToolFailure('tool_error', `request failed: ${e.message}`, true);
    });
    const location = res.headers.location;
    if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location && opts.followRedirects !== false) {
      res.resume();
      url = new URL(location, at);
      continue;
    }
    return {
      status: res.statusCode ?? 0,
      contentType: String(res.headers['content-type'] ?? ''),
      ...(await readCapped(res, maxBytes)),
    };
  }
  throw new ToolFailure('tool_error', 'too many redirects');
}

async function readCapped(res: http.IncomingMessage, maxBytes: number): Promise<{ body: string; truncated?: true }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of res) {
    const chunk = c as Buffer;
    size += chunk.length;
    if (size > maxBytes) {
      chunks.push(chunk.subarray(0, chunk.length - (size - maxBytes)));
      res.destroy();
      return { body: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    chunks.push(chunk);
  }
  return { body: Buffer.concat(chunks).toString('utf8') };
}
