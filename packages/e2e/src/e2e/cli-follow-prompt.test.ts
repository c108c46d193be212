import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAIN, stepOf, stepResults } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

// `script` gives the CLI a real terminal, so `run --follow` prompts as it does for a person.
const SCRIPT = '/usr/bin/script';

describe.runIf(existsSync(SCRIPT))('agentloop run --follow asks for a decision inline when its run pauses', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: (req) =>
        stepOf(req) === 0
          ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] }
          : { text: `done: ${stepResults(req, 0)[0]}` },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('edits the arguments, approves, and renders the run to its end', async () => {
    const cmd = `${process.execPath} ${CLI_MAIN} run "mail someone" --tools send_email --follow`;
    const child = spawn(SCRIPT, ['-qefc', cmd, '/dev/null'], {
      env: { ...process.env, AGENTLOOP_URL: s.proc.apiUrl!, AGENTLOOP_API_KEY: 'key-a', TERM: 'dumb' },
    });
    let out = '';
    const answered = new Set<string>();
    const exit = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (!answered.has('action') && out.includes('[d]eny?')) {
        answered.add('action');
        child.stdin.write('e\n');
      }
      if (!answered.has('args') && out.includes('arguments JSON:')) {
        answered.add('args');
        child.stdin.write('{"to":"edited@example.com"}\n');
      }
    });
    const code = await Promise.race([exit, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000))]);
    if (code === 'timeout') child.kill('SIGKILL');
    expect(code).toBe(0);
    expect(out).toContain('paused: send_email');
    expect(out).toContain('send_email [approved]');
    expect(out).toMatch(/completed \(final_answer\)/);
    expect(
      s
        .effects()
        .filter((e) => e.tool === 'send_email')
        .map((e) => e.to),
    ).toEqual(['edited@example.com']);
  });
});
