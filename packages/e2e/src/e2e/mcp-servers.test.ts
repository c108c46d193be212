import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ToolCatalog } from '@agentloop/runtime';
import { EVERYTHING_MAIN, stepOf, stepResults, type MockRequest, type ReplySpec } from '@agentloop/testing';
import { InProcessStack, ProcessStack } from '../test-support/stack.js';
import { byScenario, finishedRun } from '../test-support/helpers.js';

// the reference server from npm (a devDependency of the tool-runner), as a stdio child of the stack's tool-runner
const EVERYTHING = EVERYTHING_MAIN;

const STUBBORN = fileURLToPath(
  new URL('../../../../services/tool-runner/src/mcp/test-fixtures/slow-server.mjs', import.meta.url),
);
const MEMORY = fileURLToPath(
  new URL(
    '../../../../services/tool-runner/node_modules/@modelcontextprotocol/server-memory/dist/index.js',
    import.meta.url,
  ),
);

/** This process's children running server-everything (the stack's tool-runner runs in this process). */
const serverChildren = () =>
  execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => l.includes(EVERYTHING));

const callThen =
  (name: string, args: object) =>
  (req: MockRequest): ReplySpec =>
    stepOf(req) === 0 ? { toolCalls: [{ name, args }] } : { text: `result: ${stepResults(req, 0)[0]}` };
const scenarios: Record<string, (req: MockRequest) => ReplySpec> = {
  trusted: callThen('everything__echo', { message: 'hello mcp' }),
  untrusted: callThen('risky__echo', { message: 'approved first' }),
  gone: callThen('gone__read', {}),
};
const body = (scenario: string, tools: string[]) => ({
  input: `[${scenario}] please`,
  model: { provider: 'openai', name: 'gpt-4o-mini' },
  tools,
});

describe('MCP servers through the product (SPEC §6)', () => {
  let s: InProcessStack;
  beforeAll(async () => {
    const servers = [
      { name: 'everything', command: process.execPath, args: [EVERYTHING, 'stdio'], trust: 'trusted' },
      { name: 'risky', command: process.execPath, args: [EVERYTHING, 'stdio'], allowTools: ['echo'] }, // untrusted by default
      { name: 'gone', command: process.execPath, args: ['-e', 'process.exit(3)'] }, // never answers
    ];
    s = await InProcessStack.start({
      script: byScenario(scenarios, 'trusted'),
      env: { AGENTLOOP_MCP_SERVERS: JSON.stringify(servers) },
    });
  });
  let stopped = false;
  afterAll(async () => {
    if (!stopped) await s?.stop();
  });

  it('a trusted read tool of an MCP server runs at once: its result in the transcript', async () => {
    const id = await s.a.startRun(body('trusted', ['everything__echo']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(messages.find((m) => m.role === 'tool')?.content).toContain('Echo: hello mcp');
    expect(messages.at(-1)?.content).toContain('Echo: hello mcp');
  });

  it('an untrusted server’s tool is external: the run parks for approval, and runs it once approved', async () => {
    const id = await s.a.startRun(body('untrusted', ['risky__echo']));
    const paused = await s.a.waitFor(id, (r) => r.status === 'paused');
    expect(paused.pending.map((p) => [p.name, p.pauseType])).toEqual([['risky__echo', 'awaiting_approval']]);
    const r = await s.a.request('POST', `/v1/runs/${id}/decisions`, {
      decisions: [{ callId: paused.pending[0]!.callId, action: 'approve' }],
    });
    expect(r.status, r.text).toBe(202);
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    expect(messages.at(-1)?.content).toContain('Echo: approved first');
  });

  it('a tool the catalog lists from an earlier runner, of a server that has not answered since this one started: a retryable tool_error', async () => {
    // what a runner that knew the server published before it was replaced
    await new ToolCatalog(s.redis, s.keyPrefix).publish([
      {
        name: 'gone__read',
        description: 'reads',
        parameters: { type: 'object' },
        sideEffect: 'read',
        pool: 'default',
        timeoutMs: 5_000,
        retry: 'safe',
      },
    ]);
    const id = await s.a.startRun(body('gone', ['gone__read']));
    const { snap, messages } = await finishedRun(s.a, id);
    expect(snap.status).toBe('completed');
    const result = JSON.parse(messages.find((m) => m.role === 'tool')!.content!) as {
      ok: boolean;
      error: { code: string; retryable: boolean; message: string };
    };
    expect(result).toMatchObject({ ok: false, error: { code: 'tool_error', retryable: true } });
    expect(result.error.message).toMatch(/MCP server gone has not answered since this tool-runner started/);
  });

  it('stopping the process closes its MCP servers: no child left behind', async () => {
    expect(serverChildren()).toHaveLength(2);
    stopped = true;
    await s.stop();
    expect(serverChildren()).toEqual([]);
  });
});

/** The children of `pid` that run one of the reference servers. */
const serversOf = (pid: number) =>
  execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .split('\n')
    .filter((l) => [EVERYTHING, MEMORY, STUBBORN].some((s) => l.includes(s)))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
/** Whether a process still runs (a zombie nobody reaped has ended: it holds nothing but its pid). */
const running = (pid: number) => {
  try {
    return !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

describe('no orphans: a tool-runner killed with kill -9 while it holds stdio servers', () => {
  it('leaves none of them once it has restarted; the new runner has its own', async () => {
    const servers = [
      { name: 'everything', command: process.execPath, args: [EVERYTHING, 'stdio'] },
      {
        name: 'memory',
        command: process.execPath,
        args: [MEMORY],
        env: { MEMORY_FILE_PATH: `${tmpdir()}/agentloop-orphans-${process.pid}.jsonl` },
      },
      // one that keeps running when its stdin closes: only the restarted runner can end it
      {
        name: 'stubborn',
        command: process.execPath,
        args: [STUBBORN],
        env: { AGENTLOOP_TEST_SLOW_START_MS: '0', AGENTLOOP_TEST_OUTLIVE_STDIN: '1' },
      },
    ];
    const s = await ProcessStack.start(['tool-runner'], { env: { AGENTLOOP_MCP_SERVERS: JSON.stringify(servers) } });
    try {
      const before = serversOf(s.procs.get('tool-runner')!.child.pid!);
      expect(before).toHaveLength(3);
      expect(before.every(running)).toBe(true);
      await s.kill('tool-runner', 'SIGKILL');
      await s.spawn('tool-runner');
      const after = serversOf(s.procs.get('tool-runner')!.child.pid!);
      expect(after).toHaveLength(3);
      await vi.waitFor(() => expect(before.filter(running)).toEqual([]), { timeout: 10_000, interval: 100 });
    } finally {
      await s.stop();
    }
  });
});
