import http from 'node:http';
import https from 'node:https';
import { pinnedLookup, resolveGuarded } from '@agentloop/runtime';
import type { ToolDefinition } from '../tool-definition.js';
import { ToolFailure } from '../tool-definition.js';

export interface HttpGetOptions {
  maxBytes?: number;
  maxRedirects?: number;
  /** Tests only: let loopback through (the guard is still exercised for everything else). */
  allowAddress?: (address: string) => boolean;
}

/** GET with the SSRF guard: every hop is resolved, checked, and connected to at exactly the checked address. */
export async function guardedGet(rawUrl: string, signal: AbortSignal, opts: HttpGetOptions = {}) {
  const maxBytes = opts.maxBytes ?? 1_000_000;
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new ToolFailure('invalid_arguments', `not a valid URL: ${rawUrl}`);
  }
  for (let hop = 0; hop <= (opts.maxRedirects ?? 5); hop++) {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ToolFailure('blocked_url', `refused: only http and https URLs are allowed (${url.protocol})`);
    if (url.username || url.password) throw new ToolFailure('blocked_url', 'refused: URLs with credentials are not allowed');
    const guard = await resolveGuarded(url.hostname, { allowAddress: opts.allowAddress });
    if (!guard.ok) throw new ToolFailure(guard.reason === 'blocked' ? 'blocked_url' : 'tool_error', guard.message);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const lib = url.protocol === 'https:' ? https : http;
      const req = lib.request(url, {
        method: 'GET',
        signal,
        headers: { 'user-agent': 'agentloop-http_get/1', accept: '*/*' },
        lookup: pinnedLookup(guard.target),
      });
      req.on('response', resolve);
      req.on('error', reject);
      req.end();
    }).catch((e: Error) => {
      if (e instanceof ToolFailure || signal.aborted) throw e;
      throw new ToolFailure('tool_error', `request failed: ${e.message}`);
    });
    const location = res.headers.location;
    if (res.statusCode && res.statusCode >= 300 && res.statusCode < 400 && location) {
      res.resume();
      url = new URL(location, url);
      continue;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let truncated = false;
    for await (const c of res) {
      size += (c as Buffer).length;
      if (size > maxBytes) {
        truncated = true;
        chunks.push((c as Buffer).subarray(0, (c as Buffer).length - (size - maxBytes)));
        res.destroy();
        break;
      }
      chunks.push(c as Buffer);
    }
    return { status: res.statusCode ?? 0, contentType: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8'), ...(truncated ? { truncated: true } : {}) };
  }
  throw new ToolFailure('tool_error', 'too many redirects');
}

export function createHttpGet(opts: HttpGetOptions = {}): ToolDefinition {
  return {
    name: 'http_get',
    description: 'Fetch a public http(s) URL and return its status, content type and body (size-capped).',
    parameters: { type: 'object', properties: { url: { type: 'string', minLength: 1, maxLength: 8192 } }, required: ['url'], additionalProperties: false },
    sideEffect: 'read',
    pool: 'default',
    timeoutMs: 30_000,
    async execute(args, ctx) {
      return guardedGet((args as { url: string }).url, ctx.signal, opts);
    },
  };
}

export const httpGet = createHttpGet();
