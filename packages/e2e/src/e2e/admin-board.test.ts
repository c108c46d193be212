import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InProcessStack } from '../test-support/stack.js';

const KEY = 'admin-key-for-tests-0123456789';

describe('Bull Board at /admin/queues, behind the admin key', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({ env: { AGENTLOOP_ADMIN_KEY: KEY } });
  });
  afterAll(async () => {
    await s?.stop();
  });
  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${s.proc.apiUrl}${path}`, { headers });

  it('refuses requests without the key, or with a tenant key', async () => {
    const none = await get('/admin/queues');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Basic');
    expect((await get('/admin/queues', { authorization: 'Bearer key-a' })).status).toBe(401);
  });

  it('serves the board and the deployment’s queues, read-only, to the admin key (Bearer or Basic)', async () => {
    const page = await get('/admin/queues', { authorization: `Bearer ${KEY}` });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<html');
    const basic = Buffer.from(`admin:${KEY}`).toString('base64');
    const api = await get('/admin/queues/api/queues', { authorization: `Basic ${basic}` });
    expect(api.status).toBe(200);
    const body = (await api.json()) as { queues: Array<{ name: string; readOnlyMode: boolean }> };
    expect(body.queues.map((q) => q.name)).toEqual(
      expect.arrayContaining(['orchestrator', 'requests', 'decisions', 'compressor', 'tools-default']),
    );
    expect(body.queues.every((q) => q.readOnlyMode)).toBe(true);
  });
});
