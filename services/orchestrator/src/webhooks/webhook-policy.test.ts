import { describe, expect, it } from 'vitest';
import type { ResolvedAddress } from '@agentloop/runtime';
import { WebhookPolicy } from './webhook-policy.js';

const settings = {
  secrets: new Map([['tenant-a', Buffer.from('k')]]),
  retryBaseMs: 5000,
  allowedUrls: ['http://10.0.0.5:8080/hooks'],
  timeoutMs: 10_000,
};
/** A stand-in DNS: names to addresses (each lookup may answer differently: `answers` is consumed in order). */
const dns =
  (table: Record<string, string[][]>) =>
  async (host: string): Promise<ResolvedAddress[]> => {
    const answers = table[host];
    if (!answers?.length) throw new Error('ENOTFOUND');
    const a = answers.length > 1 ? answers.shift()! : answers[0]!;
    return a.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };

describe('who may use webhooks, and where to (SPEC §2)', () => {
  const policy = new WebhookPolicy(
    settings,
    dns({ 'hooks.example': [['93.184.215.14']], 'internal.example': [['10.1.2.3']], 'hooks.internal': [['10.0.0.5']] }),
  );

  it('a tenant without a secret cannot use notify', async () => {
    expect(await policy.issues({ url: 'https://hooks.example/x' }, 'tenant-b')).toEqual([
      { path: ['notify'], code: 'not_allowed', message: expect.stringContaining('no webhook signing secret') },
    ]);
    expect(await policy.issues({ url: 'https://hooks.example/x' }, 'tenant-a')).toEqual([]);
    expect(await policy.issues(undefined, 'tenant-b')).toEqual([]);
  });

  it.each([
    ['http://127.0.0.1/hook', 'resolves to 127.0.0.1'],
    ['http://[::1]:8080/hook', 'resolves to ::1'],
    ['http://169.254.169.254/latest/meta-data', 'resolves to 169.254.169.254'],
    ['https://internal.example/hook', 'internal.example resolves to 10.1.2.3'],
    ['http://10.0.0.5:8080/other', 'resolves to 10.0.0.5'],
    ['http://10.0.0.5:8080/hooksx', 'resolves to 10.0.0.5'],
    ['https://nowhere.example/hook', "cannot resolve host 'nowhere.example'"],
  ])('refuses %s (notify.url)', async (url, message) => {
    expect(await policy.issues({ url }, 'tenant-a')).toEqual([
      { path: ['notify', 'url'], code: 'not_allowed', message: expect.stringContaining(message) },
    ]);
  });

  it('lets a URL under an AGENTLOOP_WEBHOOK_ALLOWED_URLS prefix reach a private address, connecting to the address it checked', async () => {
    expect(await policy.target('http://10.0.0.5:8080/hooks/run?x=1')).toMatchObject({
      ok: true,
      target: { address: '10.0.0.5' },
    });
    expect(await policy.target('ftp://hooks.example/x')).toMatchObject({ ok: false });
  });

  it('resolves again at every check: a name that resolves to a private address by delivery time is refused then', async () => {
    const rebinding = new WebhookPolicy(settings, dns({ 'rebind.example': [['93.184.215.14'], ['127.0.0.1']] }));
    expect(await rebinding.target('https://rebind.example/h')).toMatchObject({
      ok: true,
      target: { address: '93.184.215.14' },
    });
    expect(await rebinding.target('https://rebind.example/h')).toEqual({
      ok: false,
      message: expect.stringContaining('rebind.example resolves to 127.0.0.1'),
    });
  });

  it('a name that does not resolve is transient (a delivery tries again later); a refused address is not', async () => {
    expect(await policy.target('https://gone.example/h')).toMatchObject({ ok: false, transient: true });
    expect(await policy.target('https://internal.example/h')).toMatchObject({ ok: false });
    expect(await policy.target('https://internal.example/h')).not.toHaveProperty('transient');
  });
});
