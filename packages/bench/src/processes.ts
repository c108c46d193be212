import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { CLI_MAIN } from '@agentloop/testing';
import { INSPECTOR_URL } from './inspector.js';

/** Resolves with the first capture of `pattern` in the child's stdout; every line also goes to `onLine`. */
function firstMatch(
  child: ChildProcess,
  pattern: RegExp,
  what: string,
  onLine?: (line: string) => void,
): Promise<string> {
  return new Promise((resolve, reject) => {
    let buf = '';
    let found = false;
    child.stdout!.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        const m = pattern.exec(line);
        if (m && !found) {
          found = true;
          resolve(m[1]!);
        }
        onLine?.(line);
      }
    });
    child.once('exit', (code) => !found && reject(new Error(`${what} exited (${code}) before it was ready`)));
  });
}

/** The mock model in its own process, so the numbers are agentloop's and not the mock's. */
export async function startMockProcess(
  args: string[],
  onLine?: (line: string) => void,
): Promise<{ url: string; child: ChildProcess }> {
  const main = path.join(
    path.dirname(createRequire(import.meta.url).resolve('@agentloop/testing')),
    'mock-llm',
    'main.js',
  );
  const child = spawn(process.execPath, [main, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  return { url: await firstMatch(child, /listening on (\S+)/, 'mock', onLine), child };
}

/**
 * `agentloop serve` in its own process, as a deployment runs it (every role, or `roles`); resolves with its API URL
 * (when it has the api) and its metrics URL once ready. `cli`: another build's CLI entry (a baseline to compare with)
 * [this build's]. `inspect`: start it with its inspector open on a free loopback port (`--inspect=127.0.0.1:0`) and
 * resolve with the inspector's WebSocket URL too (its stderr is read for it, and passed on).
 */
export async function startServeProcess(
  env: Record<string, string>,
  o: { roles?: string[]; cli?: string; inspect?: boolean; nodeArgs?: string[]; stdoutFile?: string } = {},
): Promise<{ apiUrl: string; metricsUrl: string; inspectorUrl: string; stop: () => Promise<void> }> {
  const args = [
    ...(o.nodeArgs ?? []),
    ...(o.inspect ? ['--inspect=127.0.0.1:0'] : []),
    o.cli ?? CLI_MAIN,
    'serve',
    ...(o.roles ?? []).flatMap((r) => ['--role', r]),
  ];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', o.inspect ? 'pipe' : 'inherit'],
    env: { ...process.env, ...env },
  });
  const inspector = o.inspect
    ? new Promise<string>((resolve) => {
        let buf: string | undefined = '';
        child.stderr!.on('data', (d: Buffer) => {
          process.stderr.write(d);
          if (buf === undefined) return;
          const m = INSPECTOR_URL.exec((buf += d.toString()));
          if (!m) return;
          buf = undefined;
          resolve(m[1]!);
        });
      })
    : Promise.resolve('');
  if (o.stdoutFile) child.stdout!.pipe(fs.createWriteStream(o.stdoutFile));
  let apiUrl = '';
  let metricsUrl = '';
  // both lines may arrive in one chunk: one reader sees them in order
  await firstMatch(child, /agentloop (ready)/, 'agentloop serve', (line) => {
    apiUrl ||= /api listening on (\S+)/.exec(line)?.[1] ?? '';
    metricsUrl ||= /metrics=(\S+)/.exec(line)?.[1] ?? '';
  });
  return {
    apiUrl,
    metricsUrl,
    inspectorUrl: await inspector,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
