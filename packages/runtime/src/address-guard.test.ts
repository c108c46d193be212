import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { isBlockedAddress, isPrivateAddress, pinnedLookup, resolveGuarded } from './address-guard.js';

describe('address guard', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '0.0.0.0',
    '100.64.0.1',
    '::1',
    'fe80::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:0:7f00:1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    'fec0::1',
    'fd00:ec2::254',
    '100.100.100.200',
    'fd20:ce::254',
    'not-an-ip',
  ])('blocks %s', (ip) => expect(isBlockedAddress(ip)).toBe(true));
  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows %s', (ip) =>
    expect(isBlockedAddress(ip)).toBe(false),
  );

  // what an operator's allowPrivate may reach: private and loopback, never link-local, metadata or reserved ranges
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '100.64.0.1',
    '100.100.100.201',
    '::1',
    'fd00::1',
    'fd20:ce::253',
    '::ffff:10.0.0.1',
  ])('private: %s', (ip) => expect(isPrivateAddress(ip)).toBe(true));
  it.each([
    '169.254.169.254',
    'fe80::1',
    'fd00:ec2::254',
    '100.100.100.200',
    '::ffff:100.100.100.200',
    '::ffff:6464:64c8',
    'fd20:ce::254',
    'fd20:ce:0:0:0:0:0:254',
    '0.0.0.0',
    '224.0.0.1',
    '8.8.8.8',
    '64:ff9b::7f00:1',
    'localhost',
  ])('not private: %s', (ip) => expect(isPrivateAddress(ip)).toBe(false));

  it('refuses a name when any address it resolves to is blocked, unless that address is allowed', async () => {
    const resolve = async () => [
      { address: '93.184.215.14', family: 4 as const },
      { address: '10.0.0.7', family: 4 as const },
    ];
    expect(await resolveGuarded('mixed.example', { resolve })).toEqual({
      ok: false,
      reason: 'blocked',
      message: expect.stringContaining('mixed.example resolves to 10.0.0.7'),
    });
    expect(await resolveGuarded('mixed.example', { resolve, allowAddress: (a) => a === '10.0.0.7' })).toEqual({
      ok: true,
      target: { address: '93.184.215.14', family: 4 },
    });
    expect(await resolveGuarded('[::1]')).toMatchObject({ ok: false, reason: 'blocked' });
    expect(
      await resolveGuarded('nowhere.invalid', { resolve: async () => Promise.reject(new Error('ENOTFOUND')) }),
    ).toMatchObject({ ok: false, reason: 'unresolvable' });
  });

  it('connects to the address it checked, whatever the name resolves to now', async () => {
    const server = http.createServer((_req, res) => res.end('pinned'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const guard = await resolveGuarded('checked.invalid', {
        resolve: async () => [{ address: '127.0.0.1', family: 4 }],
        allowAddress: () => true,
      });
      if (!guard.ok) throw new Error(guard.message);
      const body = await new Promise<string>((resolve, reject) => {
        http
          .get(
            `http://checked.invalid:${(server.address() as AddressInfo).port}/`,
            { lookup: pinnedLookup(guard.target) },
            (res) => {
              let text = '';
              res.on('data', (c) => (text += c));
              res.on('end', () => resolve(text));
            },
          )
          .on('error', reject);
      });
      expect(body).toBe('pinned'); // `.invalid` never resolves: only the pinned address can have answered
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
