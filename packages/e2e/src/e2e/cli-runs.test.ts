import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentloopClient } from '@agentloop/client';
import type { EventEnvelope } from '@agentloop/protocol';
import { CLI_MAIN, stepOf, stepResults, type MockRequest } from '@agentloop/testing';
import { InProcessStack } from '../test-support/stack.js';
import { byScenario } from '../test-support/helpers.js';

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}
const model = { provider: 'openai' as const, name: 'gpt-4o-mini', api: 'chat' as const };
const script = byScenario(
  {
    calc: (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'calculator', args: { expression: '6*7' } }] } : { text: 'it is 42' },
    mail: (req) =>
      stepOf(req) === 0 ? { toolCalls: [{ name: 'send_email', args: { to: 'a@b.c' } }] } : { text: 'sent' },
    client: (req: MockRequest) =>
      stepOf(req) === 0
        ? { toolCalls: [{ name: 'pick_file', args: {} }] }
        : { text: `picked ${stepResults(req, 0).join('')}` },
    broken: () => ({ error: { status: 400, message: 'bad request from the provider' } }),
  },
  'calc',
);
const jsonLines = (text: string) =>
  text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EventEnvelope);

/** The kubectl-style commands of `agentloop` (runs, threads, tools, submit), as a user runs them, against a real api. */
describe('agentloop runs / threads / tools / submit', () => {
  let s: InProcessStack;
  let client: AgentloopClient;
  const cli = (...args: string[]) =>
    new Promise<CliResult>((resolve) => {
      execFile(
        process.execPath,
        [CLI_MAIN, ...args],
        { env: { ...process.env, AGENTLOOP_URL: s.proc.apiUrl!, AGENTLOOP_API_KEY: 'key-a' } },
        (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        },
      );
    });
  beforeAll(async () => {
    s = await InProcessStack.start({ script });
    client = new AgentloopClient({ baseUrl: s.proc.apiUrl!, apiKey: 'key-a' });
  }, 30_000);
  afterAll(() => s?.stop());

  it('--help on every command (exit 0); unknown commands, options and missing arguments are usage errors (exit 2)', async () => {
    const commands = [
      ['runs', 'list'],
      ['runs', 'get'],
      ['runs', 'events'],
      ['runs', 'cancel'],
      ['run'],
      ['pending'],
      ['approve'],
      ['deny'],
      ['submit'],
      ['threads', 'get'],
      ['tools'],
    ];
    const helps = await Promise.all(commands.map((c) => cli(...c, '--help')));
    helps.forEach((h, i) => {
      expect(h, commands[i]!.join(' ')).toMatchObject({
        code: 0,
        stdout: expect.stringContaining(`usage: agentloop ${commands[i]!.join(' ')}`),
      });
      expect(h.stdout).toContain('--json');
    });
    expect(await cli('--help')).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/runs list[\s\S]*threads get[\s\S]*exit codes/),
    });
    expect((await cli('runs', '--help')).code).toBe(0);
    for (const bad of [
      ['nope'],
      ['runs', 'nope'],
      ['runs', 'get'],
      ['runs', 'list', '--status', 'bogus'],
      ['runs', 'list', '--limit', '0'],
      ['runs', 'get', 'x', '--include', 'bogus'],
      ['tools', '--bogus'],
      ['submit', 'r', 'c', '{not json'],
    ]) {
      const r = await cli(...bad);
      expect(r.code, bad.join(' ')).toBe(2);
      expect(r.stderr, bad.join(' ')).toContain('usage:');
    }
  });

  it('runs list, get, events and cancel: tables and text for people, JSON for machines', async () => {
    const done = (await client.runs.create({ input: '[calc] six times seven', model, tools: ['calculator'] })).id;
    await client.runs.wait(done);
    const paused = (await client.runs.create({ input: '[mail] one mail', model, tools: ['send_email'] })).id;
    await s.a.waitFor(paused, (r) => r.status === 'paused');

    const listed = JSON.parse((await cli('runs', 'list', '--json')).stdout) as Array<{ id: string }>;
    expect(listed.slice(0, 2).map((r) => r.id)).toEqual([paused, done]);
    expect(JSON.parse((await cli('runs', 'list', '--limit', '1', '--json')).stdout)).toHaveLength(1);
    expect(
      JSON.parse((await cli('runs', 'list', '--status', 'paused', '--json')).stdout).map((r: { id: string }) => r.id),
    ).toEqual([paused]);
    const table = (await cli('runs', 'list')).stdout.split('\n');
    expect(table[0]).toMatch(/^ID\s+STATUS\s+ITER\s+MODEL\s+STOP\s+CREATED\s+PENDING$/);
    expect(table.find((l) => l.startsWith(paused))).toMatch(/paused\s+1\s+openai\/gpt-4o-mini\s+\S+\s+send_email$/);

    const text = (await cli('runs', 'get', done, '--include', 'messages')).stdout;
    expect(text).toMatch(/^id: +\S+\nstatus: +completed \(final_answer\)/);
    expect(text).toContain('output:\n  it is 42');
    expect(text).toMatch(/\[assistant\] → calculator\(\{"expression":"6\*7"\}\)/);
    expect(text).toMatch(/\[tool call_\S+\] .*42/);
    expect(JSON.parse((await cli('runs', 'get', done, '--json')).stdout)).toEqual(await client.runs.get(done));

    const events = jsonLines((await cli('runs', 'events', done, '--json')).stdout);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
    expect(events.at(-1)!.type).toBe('run.completed');
    expect(jsonLines((await cli('runs', 'events', done, '--after', '2', '--json')).stdout)[0]!.seq).toBe(3);
    expect((await cli('runs', 'events', done)).stdout).toMatch(/⚙ calculator \[completed\][\s\S]*✔ completed/);
    // a live run: what it has so far, then exit 0
    const live = await cli('runs', 'events', paused, '--json');
    expect(live.code).toBe(0);
    expect(jsonLines(live.stdout).at(-1)!.type).toBe('run.paused');

    expect(await cli('runs', 'cancel', paused)).toMatchObject({ code: 0, stdout: `${paused} cancelled\n` });
    expect(await cli('runs', 'cancel', paused)).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('HTTP 409 conflict'),
    });
    expect(await cli('runs', 'get', 'run_nope')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('HTTP 404 not_found: run run_nope not found'),
    });
    const asJson = await cli('runs', 'get', 'run_nope', '--json');
    expect(asJson.code).toBe(1);
    expect(asJson.stdout).toBe('');
    expect(JSON.parse(asJson.stderr)).toEqual({
      error: { status: 404, code: 'not_found', message: 'run run_nope not found' },
    });
  });

  it('runs events --follow exits with how the run ended: 0 completed, 3 failed, 4 cancelled (also when it ended before --after)', async () => {
    const failed = (await client.runs.create({ input: '[broken] fail', model })).id;
    const followed = await cli('runs', 'events', failed, '--follow');
    expect(followed).toMatchObject({ code: 3, stdout: expect.stringContaining('✖ failed') });
    const { id } = await client.runs.create({ input: '[mail] to cancel', model, tools: ['send_email'] });
    await s.a.waitFor(id, (r) => r.status === 'paused');
    const following = cli('runs', 'events', id, '--follow', '--json');
    await new Promise((r) => setTimeout(r, 500));
    await client.runs.cancel(id);
    const cancelled = await following;
    expect(cancelled.code).toBe(4);
    const seen = jsonLines(cancelled.stdout);
    expect(seen.at(-1)!.type).toBe('run.cancelled');
    expect((await cli('runs', 'events', id, '--follow', '--after', String(seen.length))).code).toBe(4);
    const done = (await client.runs.create({ input: '[calc] follow me', model, tools: ['calculator'] })).id;
    expect(await cli('runs', 'events', done, '--follow')).toMatchObject({
      code: 0,
      stdout: expect.stringContaining('✔ completed'),
    });
    expect(await cli('runs', 'events', 'run_nope', '--follow')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('HTTP 404 not_found'),
    });
  });

  it('run --json prints the created run, run --follow --json one event per line; submit answers a client tool', async () => {
    const created = JSON.parse(
      (await cli('run', '[calc] as json', '--model', 'openai/gpt-4o-mini', '--tools', 'calculator', '--json')).stdout,
    );
    expect(created).toEqual({
      id: expect.stringMatching(/^run_/),
      status: 'queued',
      eventsUrl: `/v1/runs/${created.id}/events`,
    });
    const followed = await cli('run', '[calc] followed as json', '--tools', 'calculator', '--follow', '--json');
    expect(followed.code).toBe(0);
    expect(jsonLines(followed.stdout).map((e) => e.type)).toEqual(
      expect.arrayContaining(['run.queued', 'tool.call', 'run.completed']),
    );

    const { id } = await client.runs.create({
      input: '[client] pick',
      model,
      clientTools: [{ name: 'pick_file', parameters: { type: 'object', properties: {} } }],
    });
    const call = (await s.a.waitFor(id, (r) => r.status === 'paused')).pending[0]!.callId;
    expect(JSON.parse((await cli('submit', id, call, '{"path":"/tmp/a.txt"}', '--json')).stdout)).toEqual({
      status: 'resumed',
      remaining: [],
    });
    expect((await client.runs.wait(id)).output).toContain('/tmp/a.txt');
    expect(await cli('submit', id, call, '{}')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('HTTP 409 conflict'),
    });
  });

  it('tools lists the catalog; threads get says 404 for a thread that does not exist; an api that is down is exit 1', async () => {
    const tools = (await cli('tools')).stdout.split('\n');
    expect(tools[0]).toMatch(/^NAME\s+SIDE EFFECT\s+POOL\s+DESCRIPTION$/);
    expect(tools.find((l) => l.startsWith('send_email '))).toMatch(/^send_email\s+external\s+default\s/);
    expect(JSON.parse((await cli('tools', '--json')).stdout)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: 'calculator',
          sideEffect: 'read',
          parameters: expect.objectContaining({ type: 'object' }),
        }),
      ]),
    );
    expect(await cli('threads', 'get', 'no-such-thread')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('HTTP 404 not_found'),
    });
    expect(await cli('tools', '--url', 'http://127.0.0.1:1')).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('cannot reach the api'),
    });
  });
});
