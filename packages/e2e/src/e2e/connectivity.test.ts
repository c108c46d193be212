import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI_MAIN, RedisServer, freePort } from '@agentloop/testing';
import { until } from '../test-support/helpers.js';

/** Issue 11: a process that cannot reach Redis says so at once and keeps saying it; /readyz fails with the reason. */
describe('Redis connectivity is visible', () => {
  const children: Array<ReturnType<typeof spawn>> = [];
  afterEach(() => {
    for (const c of children.splice(0)) c.kill('SIGKILL');
  });

  const start = (env: Record<string, string>, role = 'api') => {
    const child = spawn(process.execPath, [CLI_MAIN, 'serve', '--role', role], {
      env: {
        ...process.env,
        AGENTLOOP_AUTH: 'disabled',
        AGENTLOOP_PORT: '0',
        AGENTLOOP_HOST: '127.0.0.1',
        AGENTLOOP_PREFIX: `conn-${Date.now()}`,
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    const lines: string[] = [];
    let apiUrl = '';
    let metricsUrl = '';
    let firstOutputAt = 0;
    const first = () => (firstOutputAt ||= Date.now());
    child.stdout!.on('data', (d: Buffer) => {
      first();
      lines.push(...d.toString().split('\n'));
      apiUrl ||= /agentloop api listening on (\S+)/.exec(d.toString())?.[1] ?? '';
      metricsUrl ||= /agentloop ready .*metrics=(\S+)\/metrics/.exec(d.toString())?.[1] ?? '';
    });
    child.stderr!.on('data', (d: Buffer) => {
      first();
      lines.push(...d.toString().split('\n'));
    });
    /** `firstOutputAt`: when the process printed its first line (its modules loaded: the start itself is not timed). */
    return { lines, url: () => apiUrl, metricsUrl: () => metricsUrl, firstOutputAt: () => firstOutputAt };
  };

  it('with Redis unreachable at start: where, which error, that it retries — without the credentials of REDIS_URL', async () => {
    const port = await freePort();
    const p = start({ REDIS_URL: `redis://user:hunter2secret@127.0.0.1:${port}` });
    await until('the first complaint', () => p.lines.some((l) => l.includes('cannot reach Redis')), 20_000);
    // at once: within a few seconds of the process's first line (not after a connect timeout or a failed command)
    expect(Date.now() - p.firstOutputAt()).toBeLessThan(8_000);
    const line = p.lines.find((l) => l.includes('cannot reach Redis'))!;
    expect(line).toContain(`127.0.0.1:${port}`);
    expect(line).toContain('ECONNREFUSED');
    expect(line).toContain('retrying');
    expect(p.lines.join('\n')).not.toContain('hunter2secret');
    // bounded: the reconnect loop retries many times a second, the log says it at most every 10 s per connection
    await new Promise((r) => setTimeout(r, 3000));
    expect(p.lines.filter((l) => l.includes('cannot reach Redis')).length).toBeLessThanOrEqual(4);
  }, 60_000);

  it('an invalid setting stops the process at once with a message naming it', async () => {
    const child = spawn(process.execPath, [CLI_MAIN, 'serve'], {
      env: { ...process.env, AGENTLOOP_TENANT_LIMITS: '{"*":{"burst":0}}' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    expect(code).toBe(1);
    expect(err).toMatch(/invalid environment:\n\s+AGENTLOOP_TENANT_LIMITS\.\*\.burst/);
  });

  it('losing Redis mid-run fails /readyz with the reason, and it recovers when Redis returns', async () => {
    const server = await RedisServer.start();
    try {
      const p = start({ REDIS_URL: server.url });
      await until('the api', () => p.url() !== '', 15_000);
      await until('readyz', async () => (await fetch(`${p.url()}/readyz`)).status === 200, 10_000);
      await server.stop('SIGKILL');
      await until('readyz fails', async () => (await fetch(`${p.url()}/readyz`)).status === 503, 10_000);
      const body = (await (await fetch(`${p.url()}/readyz`)).json()) as { status: string; reason: string };
      expect(body.status).toBe('not_ready');
      expect(body.reason).toMatch(/redis/);
      await until('the complaint', () => p.lines.some((l) => l.includes('cannot reach Redis')), 10_000);
      await server.start();
      await until('readyz recovers', async () => (await fetch(`${p.url()}/readyz`)).status === 200, 20_000);
      await until('the log to say so', () => p.lines.some((l) => l.includes('reachable again')), 10_000); // logged asynchronously
    } finally {
      await server.stop();
    }
  }, 60_000);

  it('a process without the api role answers /readyz on its metrics port the same way: 503 with the reason while Redis is away', async () => {
    const server = await RedisServer.start();
    try {
      const p = start({ REDIS_URL: server.url, AGENTLOOP_METRICS_PORT: '0' }, 'compressor');
      await until('the ready line', () => p.metricsUrl() !== '', 15_000);
      const readyz = async () => {
        const res = await fetch(`${p.metricsUrl()}/readyz`);
        return { status: res.status, body: (await res.json()) as { status: string; reason?: string } };
      };
      expect(await readyz()).toEqual({ status: 200, body: { status: 'ready' } });
      expect((await fetch(`${p.metricsUrl()}/healthz`)).status).toBe(200); // liveness does not depend on Redis
      await server.stop('SIGKILL');
      await until('readyz fails', async () => (await readyz()).status === 503, 10_000);
      const { body } = await readyz();
      expect(body.status).toBe('not_ready');
      expect(body.reason).toMatch(/redis/);
      expect((await fetch(`${p.metricsUrl()}/healthz`)).status).toBe(200);
      await server.start();
      await until('readyz recovers', async () => (await readyz()).status === 200, 20_000);
    } finally {
      await server.stop();
    }
  }, 60_000);
});
