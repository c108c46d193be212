import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAIN, stepOf, type ReplySpec } from '@agentloop/testing';
import { ProcessStack } from '../test-support/stack.js';
import { byScenario, until } from '../test-support/helpers.js';

/** `agentloop run --follow` as a user runs it (not a terminal: no inline prompts), against the stack's api. */
function followCli(s: ProcessStack, prompt: string, extra: string[] = []) {
  const child = spawn(process.execPath, [CLI_MAIN, 'run', prompt, '--tools', 'effect', '--follow', ...extra], {
    env: { ...process.env, AGENTLOOP_URL: s.a.baseUrl, AGENTLOOP_API_KEY: 'key-a' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  child.stdout.on('data', (d: Buffer) => (out.stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  void exited.then(() => clearTimeout(timer));
  const runId = async () => {
    await until('the CLI to print its run', () => /● run (\S+) queued/.test(out.stdout));
    return /● run (\S+) queued/.exec(out.stdout)![1]!;
  };
  return { out, exited, runId };
}

const effectRun =
  (ms: number, text: string) =>
  (req: Parameters<typeof stepOf>[0]): ReplySpec =>
    stepOf(req) === 0
      ? { toolCalls: [{ name: 'effect', args: { ms, label: req.messages.find((m) => m.role === 'user')!.content! } }] }
      : { text };

describe('agentloop run --follow: reconnects, never prints an event twice, and exits with how the run ended', () => {
  let s: ProcessStack;
  beforeAll(async () => {
    const script = byScenario(
      {
        slow: effectRun(4000, 'done after the restart'),
        long: effectRun(30_000, 'never'),
        broken: () => ({ error: { status: 400, message: 'bad request from the provider' } }),
      },
      'slow',
    );
    s = await ProcessStack.start(['api', 'orchestrator', 'tool-runner'], {
      script,
      env: { AGENTLOOP_DRAIN_MS: '1000' },
    });
  }, 60_000);
  afterAll(async () => {
    await s?.stop();
  });

  it('exit 3 for a failed run, 4 for a cancelled one', async () => {
    const failed = followCli(s, '[broken] fail please');
    const cancelled = followCli(s, '[long] cancel me');
    const id = await cancelled.runId();
    await until('the effect to start', () =>
      s.effects().some((e) => e.label === '[long] cancel me' && e.phase === 'start'),
    );
    expect((await s.a.cancel(id)).status).toBe(202);
    expect(await failed.exited).toBe(3);
    expect(failed.out.stdout).toContain('✖ failed');
    expect(await cancelled.exited).toBe(4);
    expect(cancelled.out.stdout).toContain('✖ cancelled');
  }, 60_000);

  it('the api killed (kill -9) and restarted mid-run: the CLI reconnects, prints each event once, and exits 0', async () => {
    const cli = followCli(s, '[slow] survive a restart');
    const id = await cli.runId();
    await until('the effect to start', () =>
      s.effects().some((e) => e.label === '[slow] survive a restart' && e.phase === 'start'),
    );
    await s.kill('api', 'SIGKILL');
    await new Promise((r) => setTimeout(r, 500)); // reconnects meet a closed port meanwhile
    await s.spawn('api#2');
    expect(await cli.exited).toBe(0);
    expect(cli.out.stderr).toMatch(/event stream lost after event \d+ .*reconnecting/);
    const events = (await s.a.events(id)).events;
    expect(events.at(-1)!.type).toBe('run.completed');
    const lines = cli.out.stdout.split('\n');
    const count = (prefix: string) => lines.filter((l) => l.startsWith(prefix)).length;
    expect(count('● run')).toBe(1);
    expect(count('● started')).toBe(1);
    expect(count('── iteration')).toBe(events.filter((e) => e.type === 'iteration.started').length);
    expect(count('⚙ effect')).toBe(events.filter((e) => e.type === 'tool.call').length);
    expect(count('✔ completed')).toBe(1);
    expect(cli.out.stdout).toContain('done after the restart');
  }, 90_000);

  it('the api gone for good: exit 5 once --reconnect-ms is spent, saying the run could not be followed', async () => {
    const cli = followCli(s, '[long] follow me', ['--reconnect-ms', '1500']);
    await cli.runId();
    await until('the effect to start', () =>
      s.effects().some((e) => e.label === '[long] follow me' && e.phase === 'start'),
    );
    const api = [...s.procs.keys()].find((n) => n.startsWith('api'))!;
    await s.kill(api, 'SIGKILL');
    const t0 = Date.now();
    expect(await cli.exited).toBe(5);
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(cli.out.stderr).toMatch(/could not follow run \S+ to its end: lost the event stream/);
    expect(cli.out.stdout).not.toContain('✔ completed');
  }, 60_000);
});
