import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAIN, stepOf, stepResults } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';

const exec = promisify(execFile);

describe('CLI: pending, approve, deny', () => {
  let s: InProcessStack;
  const cli = (...args: string[]) =>
    exec(process.execPath, [CLI_MAIN, ...args], {
      env: { ...process.env, AGENTLOOP_URL: s.proc.apiUrl!, AGENTLOOP_API_KEY: 'key-a' },
    });
  beforeAll(async () => {
    s = await InProcessStack.start({
      script: (req) =>
        stepOf(req) === 0
          ? {
              toolCalls: [
                { name: 'send_email', args: { to: 'a@b.c' } },
                { name: 'send_email', args: { to: 'd@e.f' } },
              ],
            }
          : { text: stepResults(req, 0).join(' / ') },
    });
  });
  afterAll(async () => {
    await s?.stop();
  });

  it('lists pending calls, approves one with edited arguments and denies the other', async () => {
    const id = await s.a.startRun({
      input: 'two mails',
      model: { provider: 'openai', name: 'gpt-4o-mini' },
      tools: ['send_email'],
    });
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    const [one, two] = paused.pending;
    const listed = await cli('pending');
    expect(listed.stdout).toContain(id);
    expect(listed.stdout).toContain(`${one!.callId}  send_email  awaiting_approval  {"to":"a@b.c"}`);
    const json = JSON.parse((await cli('pending', '--json')).stdout);
    expect(json.find((r: { id: string }) => r.id === id).pending).toHaveLength(2);
    const bad = await cli('approve', id, one!.callId, '--args', '{"to":"nope"}').catch((e) => e);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('HTTP 400 invalid_request');
    expect((await cli('approve', id, one!.callId, '--args', '{"to":"x@y.z"}')).stdout).toContain(
      `waiting for ${two!.callId}`,
    );
    expect((await cli('deny', id, two!.callId, '--reason', 'spam')).stdout).toContain(`${id} resumed`);
    const snap = await s.a.waitTerminal(id);
    expect(snap.output).toContain('"sent":true');
    expect(snap.output).toContain('Tool execution denied by user. Reason: spam');
    expect(
      s
        .effects()
        .filter((e) => e.tool === 'send_email')
        .map((e) => e.to),
    ).toEqual(['x@y.z']);
  });
});
