import dns from 'node:dns/promises';
import type { LookupFunction } from 'node:net';
import net from 'node:net';

/**
 * The SSRF guard of every request the product makes to a URL a tenant or a model chose (http_get, webhooks): resolve
 * the name, check every address it resolves to, then connect to exactly the address that was checked (pinnedLookup),
 * so a name that resolves differently a moment later (DNS rebinding) cannot reach an address the check refused.
 */

/** Addresses such a request must never reach: private, loopback, link-local, metadata, multicast, reserved. */
const BLOCKED = new net.BlockList();
for (const [addr, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const)
  BLOCKED.addSubnet(addr, bits, 'ipv4');
for (const [addr, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['2001:db8::', 32],
  ['100::', 64],
] as const)
  BLOCKED.addSubnet(addr, bits, 'ipv6');
/**
 * IPv6 forms that carry an IPv4 address (compatible ::/96, mapped ::ffff:0:0/96 in hex, SIIT, NAT64, 6to4, Teredo):
 * refused whole, as each can reach an IPv4 address the list above refuses. Kept apart because a BlockList applies
 * IPv6 rules to IPv4 addresses through their mapped form.
 */
const EMBEDS_IPV4 = new net.BlockList();
for (const [addr, bits] of [
  ['::', 96],
  ['::ffff:0:0', 96],
  ['::ffff:0:0:0', 96],
  ['64:ff9b::', 96],
  ['64:ff9b:1::', 48],
  ['2002::', 16],
  ['2001::', 32],
] as const)
  EMBEDS_IPV4.addSubnet(addr, bits, 'ipv6');

/** Whether `address` (an IP literal) is one no guarded request may reach; anything that is not an IP literal is. */
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

/**
 * Private and loopback addresses (RFC 1918, shared 100.64/10, 127/8, fc00::/7, ::1, and their IPv4-mapped forms):
 * what an operator may let a request of their own reach (an OpenAPI entry's `allowPrivate`). Link-local (cloud
 * metadata), multicast and reserved ranges are not among them: no allowance reaches those.
 */
const PRIVATE = new net.BlockList();
for (const [addr, bits] of [
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['172.16.0.0', 12],
  ['192.168.0.0', 16],
] as const)
  PRIVATE.addSubnet(addr, bits, 'ipv4');
for (const [addr, bits] of [
  ['::1', 128],
  ['fc00::', 7],
] as const)
  PRIVATE.addSubnet(addr, bits, 'ipv6');
/**
 * Metadata services on addresses of the private ranges, never private for an allowance: AWS's IPv6 instance metadata
 * (fd00:ec2::/32), Alibaba Cloud's (100.100.100.200, in 100.64/10) and Google Compute Engine's IPv6 one (fd20:ce::254).
 */
const METADATA = new net.BlockList();
METADATA.addAddress('100.100.100.200', 'ipv4');
METADATA.addSubnet('fd00:ec2::', 32, 'ipv6');
METADATA.addAddress('fd20:ce::254', 'ipv6');

export function isPrivateAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return PRIVATE.check(address, 'ipv4') && !METADATA.check(address, 'ipv4');
  if (family !== 6) return false;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return mapped ? isPrivateAddress(mapped[1]!) : PRIVATE.check(address, 'ipv6') && !METADATA.check(address, 'ipv6');
}

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type GuardAnswer =
  { ok: true; target: ResolvedAddress } | { ok: false; reason: 'unresolvable' | 'blocked'; message: string };

export interface GuardOptions {
  /** An address let through although it is blocked (the operator's allowance, or a test's loopback). */
  allowAddress?: (address: string) => boolean;
  /** Every address of a name (tests stand in for DNS here); default: the system resolver. */
  resolve?: (host: string) => Promise<ResolvedAddress[]>;
}

const systemResolve = async (host: string) =>
  (await dns.lookup(host, { all: true, verbatim: true })) as ResolvedAddress[];

/**
 * Resolves `hostname` (a name, or an IP literal, IPv6 in brackets or not) and checks every address it resolves to:
 * one blocked address refuses the name (a resolver may answer with another of them next time). The answer's target
 * is the address to connect to (pinnedLookup).
 */
export async function resolveGuarded(hostname: string, opts: GuardOptions = {}): Promise<GuardAnswer> {
  const host = hostname.replace(/^\[|\]$/g, '');
  let addrs: ResolvedAddress[];
  if (net.isIP(host)) addrs = [{ address: host, family: net.isIP(host) as 4 | 6 }];
  else {
    try {
      addrs = await (opts.resolve ?? systemResolve)(host);
    } catch {
      addrs = [];
    }
  }
  if (!addrs.length) return { ok: false, reason: 'unresolvable', message: `cannot resolve host '${host}'` };
  for (const a of addrs)
    if (isBlockedAddress(a.address) && !opts.allowAddress?.(a.address))
      return {
        ok: false,
        reason: 'blocked',
        message: `refused: ${host} resolves to ${a.address}, a private, loopback, link-local or metadata address`,
      };
  return { ok: true, target: addrs[0]! };
}

/** The `lookup` option of http(s).request that connects to `target` (the checked address) whatever the name resolves to now. */
export function pinnedLookup(target: ResolvedAddress): LookupFunction {
  return (_host, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: ResolvedAddress[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
}
