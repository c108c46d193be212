import dns from 'node:dns/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { ToolDefinition } from '../tool-definition.js';
import { ToolFailure } from '../tool-definition.js';

/** Addresses a tool must never reach: private, loopback, link-local, metadata, multicast, reserved. */
const BLOCKED = new net.BlockList();
for (const [addr, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12], ['192.0.0.0', 24],
  ['192.0.2.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(addr, bits, 'ipv4');
for (const [addr, bits] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8], ['2001:db8::', 32], ['100::', 64]] as const)
  BLOCKED.addSubnet(addr, bits, 'ipv6');
/**
 * IPv6 forms that carry an IPv4 address (compatible ::/96, mapped ::ffff:0:0/96 in hex, SIIT, NAT64, 6to4, Teredo):
 * refused whole, as each can reach an IPv4 address the list above refuses. Kept apart because a BlockList applies
 * IPv6 rules to IPv4 addresses through their mapped form.
 */
const EMBEDS_IPV4 = new net.BlockList();
for (const [addr, bits] of [['::', 96], ['::ffff:0:0', 96], ['::ffff:0:0:0', 96], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['2002::', 16], ['2001::', 32]] as const)
  EMBEDS_IPV4.addSubnet(addr, bits, 'ipv6');

export function isBlockedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return BLOCKED.check(mapped[1]!, 'ipv4');
    return BLOCKED.check(address, 'ipv6') || EMBEDS_IPV4.check(address, 'ipv6');
  }
  return true;
}

export interface HttpGetOptions {
  maxBytes?: number;
  maxRedirects?: number;
  /** Tests only: let loopback through (the guard is still exercised for everything else). */
  allowAddress?: (address: string) => boolean;
}

type Resolved = { address: string; family: 4 | 6 };

async function resolveChecked(hostname: string, opts: HttpGetOptions): Promise<Resolved> {
  const host = hostname.replace(/^\[|\]$/g, '');
  const addrs: Resolved[] = net.isIP(host)
    ? [{ address: host, family: net.isIP(host) as 4 | 6 }]
    : ((await dns.lookup(host, { all: true, verbatim: true }).catch(() => {
        throw new ToolFailure('tool_error', `cannot resolve host '${host}'`);
      })) as Resolved[]);
  if (!addrs.length) throw new ToolFailure('tool_error', `cannot resolve host '${host}'`);
  for (const a of addrs)
    if (isBlockedAddress(a.address) && !opts.allowAddress?.(a.address))
      throw new ToolFailure('blocked_url', `refused: ${host} resolves to ${a.address}, a private, loopback, link-local or metadata address`);
  return addrs[0]!;
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
    const target = await resolveChecked(url.hostname, opts);
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const lib = url.protocol === 'https:' ? https : http;
      const req = lib.request(url, {
        method: 'GET',
        signal,
        headers: { 'user-agent': 'agentloop-http_get/1', accept: '*/*' },
        lookup: (_h, o, cb) => {
          const all = (o as { all?: boolean }).all;
          if (all) (cb as unknown as (e: null, a: Resolved[]) => void)(null, [target]);
          else cb(null, target.address, target.family);
        },
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
