import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { RedisServer, stepOf } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

/**
 * Commands Redis processed while nothing happened but waiting, over `ms`: the least of two consecutive windows, so
 * that the tail of the parking just before (which a loaded machine can stretch past the settling pause) is not
 * counted as idle cost.
 */
async function idleCommands(admin: Redis, ms: number): Promise<number> {
  const read = async () => Number(/total_commands_processed:(\d+)/.exec(await admin.info('stats'))![1]);
  const windows: number[] = [];
  let before = await read();
  for (let i = 0; i < 2; i++) {
    await new Promise((r) => setTimeout(r, ms));
    const now = await read();
    windows.push(now - before - 1); // minus the INFO itself
    before = now;
  }
  return Math.min(...windows);
}

describe('parked runs cost Redis memory and nothing else', () => {
  let server: RedisServer;
  let admin: Redis;
  let s: InProcessStack;
  beforeAll(async () => {
    server = await RedisServer.start();
    admin = new Redis(server.url);
    // stalled-job checks run every AGENTLOOP_LOCK_MS / 2 per worker, independent of parked runs: a long lock keeps
    // them out of the measured windows, so the comparison sees only what parked runs could add
    s = await InProcessStack.start({
      redisUrl: server.url,
      env: { AGENTLOOP_LOCK_MS: '600000' },
      script: (req) =>
        stepOf(req) === 0 ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] } : { text: 'sent' },
    });
  });
  afterAll(async () => {
    await s?.stop();
    admin?.disconnect();
    await server?.stop();
  });

  /** Parks n more runs and waits until `total` runs are parked. */
  const park = async (n: number, total: number) => {
    const body = { input: 'mail it', model: { provider: 'openai', name: 'gpt-4o-mini' }, tools: ['send_email'] };
    for (let i = 0; i < n; i += 50)
      await Promise.all(Array.from({ length: Math.min(50, n - i) }, () => s.a.startRun(body)));
    for (;;) {
      if ((await admin.zcard(`${s.prefix}:parked`)) >= total) return;
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  it('processes no more commands over 10 idle seconds with 1,000 parked runs than with 10', async () => {
    expect(await admin.zcard(`${s.prefix}:parked`)).toBe(0);
    await park(10, 10);
    await new Promise((r) => setTimeout(r, 1000));
    const with10 = await idleCommands(admin, 10_000);
    await park(990, 1000);
    await new Promise((r) => setTimeout(r, 1000));
    const with1000 = await idleCommands(admin, 10_000);
    expect(await admin.zcard(`${s.prefix}:parked`)).toBe(1000);
    // idle workers and the resume reconciler make a constant trickle; parked runs add nothing to it
    expect(with1000).toBeLessThanOrEqual(Math.max(with10 * 1.25, with10 + 10));
    console.log(`idle commands over 10 s: ${with10} with 10 parked runs, ${with1000} with 1000`);
  }, 180_000);
});
