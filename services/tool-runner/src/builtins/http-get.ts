import type { ToolDefinition } from '../tool-definition.js';
import { guardedRequest } from '../guarded-request.js';

export interface HttpGetOptions {
  maxBytes?: number;
  maxRedirects?: number;
  /** Tests only: let loopback through (the guard is still exercised for everything else). */
  allowAddress?: (address: string) => boolean;
}

const HEADERS = { 'user-agent': 'agentloop-http_get/1', accept: '*/*' };

/** GET with the SSRF guard: every hop is resolved, checked, and connected to at exactly the checked address. */
export async function guardedGet(rawUrl: string, signal: AbortSignal, opts: HttpGetOptions = {}) {
  return guardedRequest(rawUrl, signal, {
    headers: () => HEADERS,
    maxBytes: opts.maxBytes,
    maxRedirects: opts.maxRedirects,
    allowAddress: opts.allowAddress,
  });
}

export function createHttpGet(opts: HttpGetOptions = {}): ToolDefinition {
  return {
    name: 'http_get',
    description: 'Fetch a public http(s) URL and return its status, content type and body (size-capped).',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', minLength: 1, maxLength: 8192 } },
      required: ['url'],
      additionalProperties: false,
    },
    sideEffect: 'read',
    pool: 'default',
    timeoutMs: 30_000,
    async execute(args, ctx) {
      return guardedGet((args as { url: string }).url, ctx.signal, opts);
    },
  };
}

export const httpGet = createHttpGet();
