import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import {
  REPO_ROOT,
  cleanupPrefix,
  demoAgentScript,
  startMockLlm,
  testRedisUrl,
  type MockLlmServer,
} from '@agentloop/testing';
import { ApiClient } from '../test-support/api-client.js';
import { OtlpReceiver } from '../test-support/otlp-receiver.js';

/**
 * What the Dockerfile copies into the image is `pnpm deploy --filter @agentloop/cli --prod`: this test builds that
 * bundle outside the repository and runs it (there is no Docker engine here to build the image itself).
 */
describe('the production bundle the image ships', () => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-bundle-'));
  const prefix = `bundle-${randomBytes(3).toString('hex')}`;
  let mock: MockLlmServer;
  let otlp: OtlpReceiver;
  beforeAll(async () => {
    otlp = await OtlpReceiver.start();
    // --prefer-offline: packages come from the store `pnpm install` just filled; the legacy deploy re-resolves
    // versions, so registry metadata is fetched when this machine's cache has none (a fresh clone)
    execFileSync('pnpm', ['deploy', '--filter', '@agentloop/cli', '--prod', '--legacy', '--prefer-offline', out], {
      cwd: REPO_ROOT,
      stdio: 'pipe',
      timeout: 200_000,
    });
    mock = await startMockLlm({ script: demoAgentScript() });
  }, 240_000); // the deploy copies and links the whole production tree: minutes on a loaded machine
  afterAll(async () => {
    await mock?.close();
    await otlp?.close();
    const r = new Redis(testRedisUrl());
    await cleanupPrefix(r, prefix);
    r.disconnect();
    fs.rmSync(out, { recursive: true, force: true });
  });

  it('holds no dev dependencies or sources, and serves a run end to end (traced: the SDK it loads on demand is shipped)', async () => {
    expect(fs.existsSync(path.join(out, 'node_modules/vitest'))).toBe(false);
    // no test support, tests or benchmarks in the image: the mock model, testcontainers and compiled tests stay out
    for (const absent of [
      'node_modules/@agentloop/testing',
      'node_modules/@agentloop/e2e',
      'node_modules/@agentloop/bench',
      'node_modules/testcontainers',
    ])
      expect(fs.existsSync(path.join(out, absent)), absent).toBe(false);
    const shipped = execFileSync(
      'find',
      ['-L', path.join(out, 'dist'), path.join(out, 'node_modules/@agentloop'), '-name', '*.test.js'],
      { encoding: 'utf8' },
    );
    expect(shipped).toBe('');
    expect(fs.existsSync(path.join(out, 'node_modules/@agentloop/runtime/lua/startIteration-18.lua'))).toBe(true);
    // the web console ships built, without its build tools or sources
    const consoleDir = path.dirname(
      createRequire(fs.realpathSync(path.join(out, 'node_modules/@agentloop/orchestrator/package.json'))).resolve(
        '@agentloop/console/package.json',
      ),
    );
    expect(fs.readdirSync(consoleDir).sort()).toEqual(['dist', 'package.json']);
    expect(fs.existsSync(path.join(consoleDir, 'dist/index.html'))).toBe(true);
    expect(
      fs.readdirSync(path.join(out, 'node_modules/.pnpm')).filter((d) => /^(vite|preact|rolldown)@/.test(d)),
    ).toEqual([]);
    const child = spawn(process.execPath, [path.join(out, 'dist/main.js'), 'serve'], {
      cwd: out,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        REDIS_URL: testRedisUrl(),
        AGENTLOOP_PREFIX: prefix,
        AGENTLOOP_PORT: '0',
        AGENTLOOP_HOST: '127.0.0.1',
        AGENTLOOP_API_KEYS: 'k=t',
        OPENAI_API_KEY: 'sk-x',
        OPENAI_BASE_URL: `${mock.url}/v1`,
        LOG_LEVEL: 'warn',
        AGENTLOOP_TOOL_MODULES: '',
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_BSP_SCHEDULE_DELAY: '50',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        child.stdout!.on('data', (d: Buffer) => {
          const m = /agentloop api listening on (\S+)/.exec(d.toString());
          if (m) resolve(m[1]!);
        });
        child.once('exit', (code) => reject(new Error(`the bundle exited with ${code}`)));
      });
      const c = new ApiClient(url, 'k');
      const id = await c.startRun({
        input: 'go',
        model: { provider: 'openai', name: 'gpt-4o-mini' },
        tools: ['calculator', 'current_time'],
      });
      const snap = await c.waitTerminal(id);
      expect(snap.status).toBe('completed');
      expect(snap.output).toContain('17 × 23 = 391');
      const page = await fetch(`${url}/console/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<div id="app"></div>');
    } finally {
      child.kill('SIGTERM');
      expect(await new Promise((r) => child.once('exit', (code) => r(code)))).toBe(0);
    }
    expect(otlp.spans.map((s) => s.name)).toEqual(
      expect.arrayContaining(['invoke_agent', 'chat gpt-4o-mini', 'execute_tool calculator']),
    );
  }, 60_000);
});
