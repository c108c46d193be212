import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONSOLE_CSP, CONSOLE_PATH, consoleRouter, defaultConsoleDir, type ConsoleOptions } from './console.js';

async function serveConsole(opts: ConsoleOptions) {
  const app = express();
  app.use(CONSOLE_PATH, consoleRouter(opts));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('/console: the built web console, with strict headers', () => {
  // under a dot directory, as in the image (node_modules/.pnpm/...)
  const dir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-console-')), '.pnpm', 'dist');
  let served: Awaited<ReturnType<typeof serveConsole>>;
  beforeAll(async () => {
    fs.mkdirSync(path.join(dir, 'assets'), { recursive: true });
    fs.writeFileSync(
      path.join(dir, 'index.html'),
      '<!doctype html><script type="module" src="/console/assets/app.js"></script>',
    );
    fs.writeFileSync(path.join(dir, 'assets/app.js'), 'console.log(1)');
    fs.writeFileSync(path.join(dir, '.secret'), 'SECRET-CONTENT');
    served = await serveConsole({ dir, traceUrl: 'http://jaeger.example:16686/trace/{traceId}' });
  });
  afterAll(async () => {
    await served.close();
    fs.rmSync(path.dirname(path.dirname(dir)), { recursive: true, force: true });
  });

  it('serves index.html and its assets with the CSP and the other security headers', async () => {
    const res = await fetch(`${served.base}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(await res.text()).toContain('/console/assets/app.js');
    for (const [h, v] of Object.entries({
      'content-security-policy': CONSOLE_CSP,
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
    }))
      expect(res.headers.get(h), h).toBe(v);
    expect(CONSOLE_CSP).toContain("script-src 'self'");
    expect(CONSOLE_CSP).not.toMatch(/unsafe-(inline|eval)/);
    const asset = await fetch(`${served.base}/console/assets/app.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toContain('immutable');
    expect(asset.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
  });

  it('redirects /console to /console/ and answers config.json with the trace link', async () => {
    const res = await fetch(`${served.base}/console`, { redirect: 'manual' });
    expect(res.status).toBe(301);
    expect(res.headers.get('location')).toBe('/console/');
    const config = await fetch(`${served.base}/console/config.json`);
    expect(await config.json()).toEqual({ traceUrl: 'http://jaeger.example:16686/trace/{traceId}' });
  });

  it('404s what is not the console (dotfiles, other paths), 405s a write', async () => {
    for (const p of ['/console/assets/missing.js', '/console/.secret', '/console/assets/../.secret', '/console/runs']) {
      const res = await fetch(`${served.base}${p}`);
      expect(res.status, p).toBe(404);
      expect(await res.text(), p).not.toContain('SECRET-CONTENT');
    }
    const post = await fetch(`${served.base}/console/`, { method: 'POST', body: 'x' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
  });

  it('a console that is not built is a 503 that says how to build it', async () => {
    for (const opts of [{ dir: path.join(dir, 'nothing-here') }, { dir: null }]) {
      const other = await serveConsole(opts);
      try {
        const res = await fetch(`${other.base}/console/`);
        expect(res.status).toBe(503);
        expect(await res.text()).toMatch(/the web console is not built on this server .* run `pnpm build`/);
        expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      } finally {
        await other.close();
      }
    }
  });

  it('finds the workspace build of @agentloop/console by default', () => {
    expect(defaultConsoleDir()).toMatch(/packages[/\\]console[/\\]dist$/);
  });
});
