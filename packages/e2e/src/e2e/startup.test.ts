import { spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { DeploymentKeys } from '@agentloop/protocol';
import { CLI_MAIN, testRedisUrl } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';

/** `agentloop serve` as an operator starts it, with only the given environment (and PATH). */
function serveOnce(
  env: Record<string, string>,
  timeoutMs = 20_000,
  args: string[] = [],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI_MAIN, 'serve', ...args], {
    env: {
      PATH: process.env.PATH ?? '',
      REDIS_URL: testRedisUrl(),
      AGENTLOOP_PORT: '0',
      AGENTLOOP_HOST: '127.0.0.1',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  return new Promise((resolve) =>
    child.once('exit', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr }))),
  );
}

describe('what a process says at start', () => {
  let s: ProcessStack | undefined;
  afterEach(async () => {
    await s?.stop();
    s = undefined;
  });

  it('an AGENTLOOP_PARTITIONS that is not 1 to 64 stops it before it serves anything, without echoing the value', async () => {
    const r = await serveOnce({
      AGENTLOOP_PREFIX: 'startup-partitions',
      AGENTLOOP_PARTITIONS: 'sk-do-not-echo',
    });
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain('agentloop ready');
    expect(r.stderr).toContain('AGENTLOOP_PARTITIONS');
    expect(r.stderr).not.toContain('sk-do-not-echo'); // a value is never echoed
  });

  it('an OpenAPI tools entry whose document cannot be loaded stops a tool-runner at start, naming the entry and the problem', async () => {
    const entry = {
      name: 'crm',
      spec: '/nonexistent/crm.yaml',
      baseUrl: 'https://crm.internal/api',
      headers: { Authorization: 'Bearer ${env:CRM_TOKEN}' },
      operations: ['getCustomer'],
    };
    const r = await serveOnce(
      {
        AGENTLOOP_PREFIX: 'startup-openapi',
        AGENTLOOP_METRICS_PORT: '0',
        CRM_TOKEN: 'sk-crm-do-not-echo',
        AGENTLOOP_OPENAPI_TOOLS: JSON.stringify([entry]),
      },
      20_000,
      ['--role', 'tool-runner'],
    );
    expect(r.code).toBe(1);
    expect(r.stdout).not.toContain('agentloop ready');
    expect(r.stderr).toMatch(/AGENTLOOP_OPENAPI_TOOLS \[crm\]: the document \/nonexistent\/crm.yaml cannot be loaded/);
    expect(r.stderr).not.toContain('sk-crm-do-not-echo');
    // a malformed entry stops every role, an api too
    const malformed = await serveOnce({
      AGENTLOOP_PREFIX: 'startup-openapi',
      AGENTLOOP_OPENAPI_TOOLS: JSON.stringify([{ ...entry, operations: [] }]),
    });
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toContain(
      'AGENTLOOP_OPENAPI_TOOLS: [0.operations] list the operationIds to expose as tools',
    );
  });

  it("live runs of an earlier build's layout stop it before it serves anything, naming them and what to do", async () => {
    const prefix = `startup-layout-${Date.now()}`;
    const redis = new Redis(testRedisUrl());
    try {
      const keys = new DeploymentKeys(prefix);
      // a running run of a build before 2026-12-03 (layout 1: no `lay` field), and a finished one (never in the way)
      await redis.hset(keys.run('run_old1').state, 'id', 'run_old1', 'status', 'running', 'tenant', 'T');
      await redis.zadd(keys.runningRuns, Date.now(), 'run_old1');
      await redis.hset(keys.run('run_old2').state, 'id', 'run_old2', 'status', 'completed', 'tenant', 'T', 'lay', '2');
      await redis.zadd(keys.runningRuns, Date.now(), 'run_old2');
      const r = await serveOnce({ AGENTLOOP_PREFIX: prefix, AGENTLOOP_AUTH: 'disabled' });
      expect(r.code).toBe(1);
      expect(r.stdout).not.toContain('agentloop ready');
      expect(r.stderr).toContain('live runs stored in the layout of a build before 2026-12-03 (run_old1)');
      expect(r.stderr).toContain('docs/OPERATIONS.md');
      // drained: it starts
      await redis.hset(keys.run('run_old1').state, 'status', 'cancelled');
      const child = spawn(process.execPath, [CLI_MAIN, 'serve'], {
        env: {
          PATH: process.env.PATH ?? '',
          REDIS_URL: testRedisUrl(),
          AGENTLOOP_PORT: '0',
          AGENTLOOP_HOST: '127.0.0.1',
          AGENTLOOP_PREFIX: prefix,
          AGENTLOOP_AUTH: 'disabled',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        await new Promise<void>((resolve, reject) => {
          let out = '';
          child.stdout.on('data', (d: Buffer) => ((out += d.toString()), out.includes('agentloop ready') && resolve()));
          child.once('exit', (code) => reject(new Error(`exited ${code}`)));
        });
      } finally {
        child.kill('SIGKILL');
      }
      expect(await redis.exists(keys.layoutChecked('3'))).toBe(1); // no later start reads every live run again
    } finally {
      redis.disconnect();
    }
  });

  it('an OTLP protocol this build does not speak (grpc) starts it, with one warning that no spans are exported', async () => {
    s = await ProcessStack.start(['api'], {
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
        LOG_LEVEL: 'info',
      },
    });
    const warnings = s.procs.get('api')!.output.filter((l) => l.includes('OTEL_EXPORTER_OTLP_PROTOCOL'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({
      level: 40,
      msg: 'OTEL_EXPORTER_OTLP_PROTOCOL=grpc is not supported (http/json and http/protobuf are): no spans are exported',
    });
    expect((await s.a.request('GET', '/v1/runs')).status).toBe(200); // and it serves
  });

  it('auth required and no API keys: it says so at start (stderr, whatever LOG_LEVEL says) and in every 401', async () => {
    s = await ProcessStack.start(['api'], { env: { AGENTLOOP_API_KEYS: '', LOG_LEVEL: 'silent' } });
    const told = s.procs
      .get('api')!
      .output.filter((l) => l.includes('AGENTLOOP_API_KEYS is empty: every API request will be answered 401'));
    expect(told).toHaveLength(1);
    expect(told[0]).toMatch(/^agentloop: AGENTLOOP_AUTH=required/); // a plain line, not a (silenced) log record
    for (const client of [s.a, s.anon]) {
      const r = await client.request('GET', '/v1/runs');
      expect(r.status).toBe(401);
      expect(r.json.error).toMatchObject({
        code: 'unauthorized',
        message: expect.stringContaining('no API keys are configured on the server'),
      });
    }
    await s.kill('api', 'SIGTERM');
    await s.spawn('api', { LOG_LEVEL: 'warn' });
    expect(
      s.procs
        .get('api')!
        .output.filter(
          (l) =>
            l.startsWith('{') &&
            JSON.parse(l).level === 40 &&
            JSON.parse(l).msg.includes('AGENTLOOP_API_KEYS is empty'),
        ),
    ).toHaveLength(1);
  });
});
