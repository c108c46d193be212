import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { executeToolCall } from '../execute-tool-call.js';
import { ToolRegistry } from '../registry.js';
import { isolationLimits } from './process-isolation.js';

const TOOLS = fileURLToPath(new URL('test-fixtures/isolated-tools.mjs', import.meta.url));
const opts = { maxResultBytes: 20_000, maxResultTokens: 2_000 };

const lines: Array<{ level: string; args: unknown[] }> = [];
const at =
  (level: string) =>
  (...args: unknown[]) =>
    void lines.push({ level, args });
const ctx = {
  runId: 'run-1',
  callId: 'call-1',
  tenantId: 'tenant-a',
  idempotencyKey: 'run-1:call-1',
  logger: { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') },
};

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** The pid a tool logged from its child (tools that never answer say who they are first). */
const loggedPid = async (msg: string) => {
  let pid = 0;
  await vi.waitFor(
    () => {
      const line = lines.find((l) => l.args[1] === msg);
      expect(line).toBeDefined();
      pid = (line!.args[0] as { pid: number }).pid;
    },
    { timeout: 10_000, interval: 20 },
  );
  return pid;
};

describe('isolation: "process" (SPEC §6): each call in a child process of its own', () => {
  let reg: ToolRegistry;
  const call = (name: string, signal = new AbortController().signal) =>
    executeToolCall(reg.get(name), name, '{"a":1}', ctx, signal, opts);
  beforeAll(async () => {
    reg = await ToolRegistry.withModules([TOOLS], [], { memoryMb: 64 });
  });
  afterAll(() => reg.close());

  it('runs the tool in a child of the runner with its arguments and ctx; its logger lines reach the runner’s', async () => {
    const out = await call('whoami');
    expect(out.status).toBe('completed');
    const r = out.result as { pid: number; ppid: number; args: unknown; ctx: object };
    expect(r.pid).not.toBe(process.pid);
    expect(r.ppid).toBe(process.pid);
    expect(r.args).toEqual({ a: 1 });
    expect(r.ctx).toEqual({
      runId: 'run-1',
      callId: 'call-1',
      tenantId: 'tenant-a',
      idempotencyKey: 'run-1:call-1',
      aborted: false,
    });
    expect(lines).toContainEqual({ level: 'info', args: [{ fromChild: r.pid }, 'hello from the child'] });
    expect(lines).toContainEqual({
      level: 'warn',
      args: [expect.objectContaining({ name: 'Error', message: 'a logged error' })],
    });
    // a child per call: the next call is answered by another process, and this one is gone
    const again = (await call('whoami')).result as { pid: number };
    expect(again.pid).not.toBe(r.pid);
    await vi.waitFor(() => expect(alive(r.pid)).toBe(false));
  });

  it('a tool that allocates without bound and one that spins forever each get a structured error while other calls go on', async () => {
    const hog = call('hog');
    const spin = call('spin');
    const spinPid = await loggedPid('spinning');
    // meanwhile the runner serves other calls, isolated and in-process
    const others = await Promise.all([
      call('whoami'),
      call('whoami'),
      executeToolCall(
        reg.get('calculator'),
        'calculator',
        '{"expression":"6*7"}',
        ctx,
        new AbortController().signal,
        opts,
      ),
    ]);
    expect(others.map((o) => o.status)).toEqual(['completed', 'completed', 'completed']);
    const [h, s] = await Promise.all([hog, spin]);
    expect(h).toMatchObject({ status: 'error', executed: true, error: { code: 'tool_error', retryable: false } });
    expect(h.error!.message).toMatch(/ran out of memory: its process may use 64 MB of heap/);
    expect(s).toMatchObject({ status: 'error', error: { code: 'timeout' } });
    await vi.waitFor(() => expect(alive(spinPid)).toBe(false)); // killed, not left spinning
    expect((await call('whoami')).status).toBe('completed');
  });

  it('cancel mid-call kills the child', async () => {
    const ac = new AbortController();
    const p = call('wait_forever', ac.signal);
    const pid = await loggedPid('waiting');
    expect(alive(pid)).toBe(true);
    ac.abort(new Error('run cancelled'));
    expect(await p).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    await vi.waitFor(() => expect(alive(pid)).toBe(false));
  });

  it('a child killed while it waits for its call is replaced: the call runs in another', async () => {
    await call('whoami'); // a spare is started when a call ends
    const spares = () =>
      execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' })
        .split('\n')
        .filter((l) => l.includes('child-entry'))
        .map((l) => Number(l.trim().split(/\s+/)[0]));
    await vi.waitFor(() => expect(spares()).toHaveLength(1));
    const [spare] = spares();
    process.kill(spare!, 'SIGKILL');
    await vi.waitFor(() => expect(alive(spare!)).toBe(false)); // reaped: the runner has seen it end
    const out = await call('whoami');
    expect(out.status).toBe('completed');
    expect((out.result as { pid: number }).pid).not.toBe(spare);
  });

  it('a crash is a tool_error: process.exit, an uncaught exception, a thrown error, a ToolFailure keeps its code', async () => {
    expect(await call('exits')).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', message: "the tool's process exited with code 3 before it answered" },
    });
    expect(await call('throws_later')).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', message: 'the tool crashed: boom in a timer' },
    });
    expect(await call('throws')).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', message: 'plain failure' },
    });
    expect(await call('fails_with_code')).toMatchObject({
      status: 'error',
      error: { code: 'blocked_url', message: 'not that address', retryable: false },
    });
  });

  it('the result takes the path of any result: not serializable, or over the cap', async () => {
    expect(await call('unserializable')).toMatchObject({
      status: 'error',
      error: { code: 'tool_error', message: 'the tool returned a value that is not JSON-serializable' },
    });
    expect(await call('huge_answer')).toMatchObject({ status: 'error', error: { code: 'result_too_large' } });
  });

  it('a module that throws at its top level in the child: its calls are tool_errors', async () => {
    process.env.AGENTLOOP_TEST_ISOLATED_LOAD_FAILS = '1';
    const failing = await ToolRegistry.withModules([TOOLS], [], { memoryMb: 64 });
    try {
      const out = await executeToolCall(failing.get('whoami'), 'whoami', '{}', ctx, new AbortController().signal, opts);
      expect(out).toMatchObject({
        status: 'error',
        error: { code: 'tool_error', message: "the tool's module failed to load in its process: cannot load here" },
      });
    } finally {
      delete process.env.AGENTLOOP_TEST_ISOLATED_LOAD_FAILS;
      failing.close();
    }
  });
});

describe('AGENTLOOP_ISOLATION_MEMORY_MB', () => {
  it('defaults to 256 and refuses what is not a whole number of megabytes from 16', () => {
    expect(isolationLimits({})).toEqual({ memoryMb: 256 });
    expect(isolationLimits({ AGENTLOOP_ISOLATION_MEMORY_MB: '512' })).toEqual({ memoryMb: 512 });
    for (const bad of ['8', '1.5', 'lots', '-1'])
      expect(() => isolationLimits({ AGENTLOOP_ISOLATION_MEMORY_MB: bad })).toThrow(
        /AGENTLOOP_ISOLATION_MEMORY_MB: .* is not a whole number of megabytes/,
      );
  });
});
