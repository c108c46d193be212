import { execFileSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { executeToolCall } from '../execute-tool-call.js';
import { ToolRegistry } from '../registry.js';
import { parseMcpServers } from './config.js';
import { McpTools } from './mcp-tools.js';
import { EVERYTHING_MAIN, startEverythingHttp } from '@agentloop/testing';

// the real reference servers from the npm registry, run as they ship
const modules = new URL('../../node_modules/@modelcontextprotocol/', import.meta.url);
const EVERYTHING = EVERYTHING_MAIN;
const MEMORY = fileURLToPath(new URL('server-memory/dist/index.js', modules));

const logged: Array<{ level: string; fields: object; msg: string }> = [];
const logger = {
  info: (fields: object, msg: string) => logged.push({ level: 'info', fields, msg }),
  warn: (fields: object, msg: string) => logged.push({ level: 'warn', fields, msg }),
  error: (fields: object, msg: string) => logged.push({ level: 'error', fields, msg }),
};
const ctx = { runId: 'r', callId: 'c', tenantId: 't', idempotencyKey: 'r:c', logger: console };
const opts = { maxResultBytes: 1_000_000, maxResultTokens: 10_000 };

async function withTools(servers: unknown[], environment: Record<string, string | undefined> = process.env) {
  const mcp = await McpTools.start(parseMcpServers(JSON.stringify(servers)), () => true, {
    logger,
    environment,
    stderr: 'ignore',
    backoffMs: 100,
  });
  const registry = new ToolRegistry([]);
  const publish = vi.fn(async () => undefined);
  mcp.attach(registry, publish);
  const call = (name: string, args: object, signal = new AbortController().signal) =>
    executeToolCall(registry.get(name), name, JSON.stringify(args), ctx, signal, opts);
  return { mcp, registry, publish, call };
}

/** This process's child processes running `script` (the stdio servers). */
const childrenRunning = (script: string): number[] => {
  const out = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(process.pid)], { encoding: 'utf8' });
  return out
    .split('\n')
    .filter((l) => l.includes(script))
    .map((l) => Number(l.trim().split(/\s+/)[0]));
};

const everything = { name: 'everything', command: process.execPath, args: [EVERYTHING, 'stdio'], timeoutMs: 20_000 };

describe('MCP servers over stdio (the reference servers)', () => {
  let t: Awaited<ReturnType<typeof withTools>>;
  beforeAll(async () => {
    process.env.AGENTLOOP_TEST_RUNNER_SECRET = 'runner-only';
    t = await withTools(
      [
        {
          ...everything,
          env: { FROM_CONFIG: '${env:AGENTLOOP_TEST_MCP_TOKEN}' },
          trust: 'trusted',
          denyTools: ['toggle-simulated-logging'],
        },
        {
          name: 'memory',
          command: process.execPath,
          args: [MEMORY],
          env: { MEMORY_FILE_PATH: '/tmp/agentloop-mcp-memory-${env:VITEST_POOL_ID}.jsonl' },
        },
      ],
      { ...process.env, AGENTLOOP_TEST_MCP_TOKEN: 'tok-123' },
    );
  });
  afterAll(() => t.mcp.close());

  it('catalog: <server>__<tool> with the server description and schema; trust mapped from the real annotations; denyTools honoured', () => {
    const echo = t.registry.get('everything__echo')!.entry;
    expect(echo).toMatchObject({ sideEffect: 'read', retry: 'safe', pool: 'default', timeoutMs: 20_000 });
    expect(echo.description).toMatch(/echo/i);
    expect(echo.parameters).toMatchObject({ type: 'object', properties: { message: { type: 'string' } } });
    expect(t.registry.get('everything__gzip-file-as-resource')!.entry).toMatchObject({
      sideEffect: 'reversible',
      retry: 'safe',
    }); // destructiveHint false, idempotent
    expect(t.registry.get('everything__toggle-subscriber-updates')!.entry).toMatchObject({
      sideEffect: 'reversible',
      retry: 'never',
    });
    expect(t.registry.get('everything__toggle-simulated-logging')).toBeUndefined();
    // untrusted (the default): external and never retried, whatever the server says (delete_entities claims idempotent)
    for (const name of ['memory__create_entities', 'memory__delete_entities', 'memory__read_graph'])
      expect(t.registry.get(name)!.entry).toMatchObject({ sideEffect: 'external', retry: 'never' });
  });

  it('calls: text, structured and image results mapped; arguments validated against the server schema', async () => {
    expect(await t.call('everything__echo', { message: 'hi' })).toMatchObject({
      status: 'completed',
      result: 'Echo: hi',
    });
    const sum = await t.call('everything__get-sum', { a: 2, b: 3 });
    expect(sum.status).toBe('completed');
    expect(String(sum.result)).toContain('5');
    const structured = await t.call('everything__get-structured-content', { location: 'New York' });
    expect(structured).toMatchObject({ status: 'completed', result: { temperature: expect.any(Number) } });
    const image = await t.call('everything__get-tiny-image', {});
    expect(image.result).toMatch(/\[image image\/png, \d+ bytes\]/);
    expect(image.content.length).toBeLessThan(2_000); // no base64 in the transcript
    expect(await t.call('everything__get-sum', { a: 'x' })).toMatchObject({
      status: 'error',
      error: { code: 'invalid_arguments' },
    });
    const created = await t.call('memory__create_entities', {
      entities: [{ name: 'agentloop', entityType: 'project', observations: ['runs agents'] }],
    });
    expect(created.status).toBe('completed');
  });

  it('parallel calls go out on the one connection at once, each answered with its own result', async () => {
    const outs = await Promise.all(
      Array.from({ length: 12 }, (_, i) => t.call('everything__echo', { message: `n${i}` })),
    );
    expect(outs.map((o) => o.result)).toEqual(Array.from({ length: 12 }, (_, i) => `Echo: n${i}`));
    // a call that takes a while does not hold the others back: an echo is answered while a 10 s operation runs
    const ac = new AbortController();
    let longOver = false;
    const long = t
      .call('everything__trigger-long-running-operation', { duration: 10, steps: 10 }, ac.signal)
      .finally(() => (longOver = true));
    expect(await t.call('everything__echo', { message: 'meanwhile' })).toMatchObject({
      status: 'completed',
      result: 'Echo: meanwhile',
    });
    expect(longOver).toBe(false);
    ac.abort(new Error('done'));
    expect((await long).status).toBe('cancelled');
    expect(childrenRunning(EVERYTHING)).toHaveLength(1);
  });

  it('a stdio server gets its configured env (${env:} resolved) and the SDK default variables, not the runner environment', async () => {
    const env = JSON.parse(String((await t.call('everything__get-env', {})).result)) as Record<string, string>;
    expect(env.FROM_CONFIG).toBe('tok-123');
    expect(env.PATH).toBeDefined();
    expect(env.AGENTLOOP_TEST_RUNNER_SECRET).toBeUndefined();
    expect(JSON.stringify(t.registry.all().map((x) => x.entry))).not.toContain('tok-123'); // nor in the catalog
    expect(JSON.stringify(logged)).not.toContain('tok-123');
  });

  it('isError: true is a tool_error with the server text', async () => {
    // the memory server answers a relation to nothing with an error result
    const out = await t.call('memory__add_observations', {
      observations: [{ entityName: 'no-such-entity', contents: ['x'] }],
    });
    expect(out).toMatchObject({ status: 'error', error: { code: 'tool_error' } });
    expect(out.error!.message).toMatch(/no-such-entity/);
  });

  it('cancellation mid-call sends notifications/cancelled for the request', async () => {
    const sent: Array<{ method?: string; params?: { requestId?: unknown } }> = [];
    const originalSend = StdioClientTransport.prototype.send;
    const spy = vi.spyOn(StdioClientTransport.prototype, 'send').mockImplementation(async function (
      this: StdioClientTransport,
      msg,
    ) {
      sent.push(msg as (typeof sent)[number]);
      return originalSend.call(this, msg);
    });
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('run cancelled')), 500);
    const out = await t.call('everything__trigger-long-running-operation', { duration: 10, steps: 10 }, ac.signal);
    spy.mockRestore();
    expect(out.status).toBe('cancelled');
    const request = sent.find((m) => (m as { method?: string }).method === 'tools/call') as
      { id?: unknown } | undefined;
    expect(sent.find((m) => m.method === 'notifications/cancelled')?.params?.requestId).toBe(request?.id);
  });

  it('a server killed mid-call: a retryable tool_error; the next call reconnects', async () => {
    const [pid] = childrenRunning(EVERYTHING);
    setTimeout(() => process.kill(pid!, 'SIGKILL'), 300);
    const out = await t.call('everything__trigger-long-running-operation', { duration: 10, steps: 10 });
    expect(out).toMatchObject({ status: 'error', error: { code: 'tool_error', retryable: true } });
    expect(out.error!.message).toMatch(/MCP server everything could not be reached/);
    expect(await t.call('everything__echo', { message: 'back' })).toMatchObject({
      status: 'completed',
      result: 'Echo: back',
    });
    expect(childrenRunning(EVERYTHING)).toHaveLength(1);
    expect(t.registry.get('everything__echo')).toBeDefined(); // its tools stayed while it was down
    expect(t.publish).toHaveBeenCalled(); // and were listed again, and published, when it came back
  });

  it('close leaves no child process behind', async () => {
    await t.mcp.close();
    expect(childrenRunning(EVERYTHING)).toEqual([]);
    expect(childrenRunning(MEMORY)).toEqual([]);
  });
});

describe('MCP server configuration at start', () => {
  afterEach(() => (logged.length = 0));

  it('a server naming an unset variable is not started, and the log says which (never a value)', async () => {
    const t = await withTools(
      [{ ...everything, env: { TOKEN: '${env:AGENTLOOP_TEST_UNSET}', OTHER: '${env:SECRET}' } }],
      { SECRET: 's3cret' },
    );
    expect(t.registry.all()).toEqual([]);
    expect(childrenRunning(EVERYTHING)).toEqual([]);
    const line = logged.find((l) => l.level === 'error')!;
    expect(line).toMatchObject({ fields: { mcpServer: 'everything', missing: ['AGENTLOOP_TEST_UNSET'] } });
    expect(JSON.stringify(logged)).not.toContain('s3cret');
    await t.mcp.close();
  });

  it('a server that cannot be reached at start: its tools unknown, logged; allowTools keeps only the listed ones', async () => {
    const t = await withTools([
      { name: 'gone', command: process.execPath, args: ['-e', 'process.exit(3)'] },
      { ...everything, allowTools: ['echo'] },
    ]);
    expect(t.registry.all().map((x) => x.entry.name)).toEqual(['everything__echo']);
    expect(t.registry.get('everything__echo')!.entry).toMatchObject({ sideEffect: 'external', retry: 'never' });
    expect(logged.find((l) => l.level === 'error')).toMatchObject({
      fields: { mcpServer: 'gone' },
      msg: expect.stringMatching(/unreachable at start: its tools are unknown/),
    });
    // a call to one of its tools (the catalog may list them from an earlier runner) is retryable, not unknown_tool
    expect(t.registry.unavailable('gone__read')).toMatch(
      /MCP server gone has not answered since this tool-runner started/,
    );
    expect(t.registry.unavailable('everything__nope')).toBeUndefined();
    expect(t.registry.unavailable('other__read')).toBeUndefined();
    await t.mcp.close();
    expect(childrenRunning(EVERYTHING)).toEqual([]);
  });
});

describe('notifications/tools/list_changed', () => {
  it('a server that adds a tool: listed again, registered and published; the old names keep their place', async () => {
    const fixture = fileURLToPath(new URL('test-fixtures/growing-server.mjs', import.meta.url));
    const t = await withTools([{ name: 'growing', command: process.execPath, args: [fixture], trust: 'trusted' }]);
    try {
      expect(t.registry.all().map((x) => x.entry.name)).toEqual(['growing__grow']);
      expect(await t.call('growing__grow', {})).toMatchObject({ status: 'completed', result: 'now 2 tools' });
      await vi.waitFor(() => expect(t.registry.get('growing__grown_1')).toBeDefined());
      expect(t.publish).toHaveBeenCalled();
      expect(await t.call('growing__grown_1', {})).toMatchObject({ status: 'completed', result: 'grown 1' });
    } finally {
      await t.mcp.close();
    }
  });
});

describe('a server slow to start', () => {
  it('stdio: the runner waits for it at start: its tools are listed and called', async () => {
    const slow = fileURLToPath(new URL('test-fixtures/slow-server.mjs', import.meta.url));
    const t0 = performance.now();
    const t = await withTools([
      {
        name: 'slow',
        command: process.execPath,
        args: [slow],
        env: { AGENTLOOP_TEST_SLOW_START_MS: '2000' },
        trust: 'trusted',
      },
    ]);
    try {
      expect(performance.now() - t0).toBeGreaterThan(2_000);
      expect(t.registry.get('slow__echo')!.entry).toMatchObject({ sideEffect: 'read', retry: 'safe' });
      expect(await t.call('slow__echo', { message: 'at last' })).toMatchObject({
        status: 'completed',
        result: 'slow echo: at last',
      });
    } finally {
      await t.mcp.close();
    }
  });

  it('Streamable HTTP: a server that comes up after the runner started has its tools registered and published once it answers', async () => {
    const port = await freePort();
    const t = await withTools([{ name: 'late', url: `http://127.0.0.1:${port}/mcp`, trust: 'trusted' }]);
    let server: ChildProcess | undefined;
    try {
      expect(t.registry.get('late__echo')).toBeUndefined();
      expect(t.registry.unavailable('late__echo')).toMatch(
        /MCP server late has not answered since this tool-runner started/,
      );
      server = await startEverythingHttp(port);
      await vi.waitFor(() => expect(t.registry.get('late__echo')).toBeDefined(), { timeout: 10_000, interval: 50 });
      expect(t.publish).toHaveBeenCalled();
      expect(await t.call('late__echo', { message: 'late' })).toMatchObject({
        status: 'completed',
        result: 'Echo: late',
      });
    } finally {
      await t.mcp.close();
      server?.kill();
    }
  });
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

describe('MCP servers over Streamable HTTP (server-everything)', () => {
  it('cancellation mid-call sends notifications/cancelled for the request over HTTP too', async () => {
    const port = await freePort();
    const server = await startEverythingHttp(port);
    const t = await withTools([{ name: 'web', url: `http://127.0.0.1:${port}/mcp`, trust: 'trusted' }]);
    const sent: Array<{ id?: unknown; method?: string; params?: { requestId?: unknown } }> = [];
    const originalSend = StreamableHTTPClientTransport.prototype.send;
    const spy = vi.spyOn(StreamableHTTPClientTransport.prototype, 'send').mockImplementation(async function (
      this: StreamableHTTPClientTransport,
      msg,
      options,
    ) {
      sent.push(msg as (typeof sent)[number]);
      return originalSend.call(this, msg, options);
    });
    try {
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error('run cancelled')), 500);
      const t0 = performance.now();
      const out = await t.call('web__trigger-long-running-operation', { duration: 10, steps: 10 }, ac.signal);
      expect(out.status).toBe('cancelled');
      expect(performance.now() - t0).toBeLessThan(5_000);
      const request = sent.find((m) => m.method === 'tools/call');
      expect(sent.find((m) => m.method === 'notifications/cancelled')?.params?.requestId).toBe(request?.id);
      // the connection is still good for the next call
      expect(await t.call('web__echo', { message: 'after cancel' })).toMatchObject({
        status: 'completed',
        result: 'Echo: after cancel',
      });
    } finally {
      spy.mockRestore();
      await t.mcp.close();
      server.kill();
    }
  });

  it('a server killed mid-call over HTTP: a structured, retryable tool_error (not a wait until the timeout); then a reconnect', async () => {
    const port = await freePort();
    let server = await startEverythingHttp(port);
    const t = await withTools([
      { name: 'web', url: `http://127.0.0.1:${port}/mcp`, trust: 'trusted', timeoutMs: 30_000 },
    ]);
    try {
      setTimeout(() => server.kill('SIGKILL'), 500);
      const t0 = performance.now();
      const out = await t.call('web__trigger-long-running-operation', { duration: 10, steps: 10 });
      expect(out).toMatchObject({ status: 'error', error: { code: 'tool_error', retryable: true } });
      expect(performance.now() - t0).toBeLessThan(9_000);
      await new Promise((r) =>
        server.exitCode === null && server.signalCode === null ? server.once('exit', r) : r(null),
      );
      server = await startEverythingHttp(port);
      await vi.waitFor(
        async () =>
          expect(await t.call('web__echo', { message: 'back' })).toMatchObject({
            status: 'completed',
            result: 'Echo: back',
          }),
        { timeout: 10_000, interval: 100 },
      );
    } finally {
      await t.mcp.close();
      server.kill();
    }
  });

  it('lists and calls; a restarted server (stale session) is re-initialized; down, a call is a retryable tool_error', async () => {
    const port = await freePort();
    let server = await startEverythingHttp(port);
    const t = await withTools([
      { name: 'web', url: `http://127.0.0.1:${port}/mcp`, headers: { 'X-Test': 'yes' }, trust: 'trusted' },
    ]);
    try {
      expect(t.registry.get('web__echo')!.entry).toMatchObject({ sideEffect: 'read', retry: 'safe' });
      expect(await t.call('web__echo', { message: 'over http' })).toMatchObject({
        status: 'completed',
        result: 'Echo: over http',
      });

      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      expect(await t.call('web__echo', { message: 'x' })).toMatchObject({
        status: 'error',
        error: { code: 'tool_error', retryable: true },
      });
      expect(t.registry.get('web__echo')).toBeDefined();
      // the connection attempt that failed starts a backoff: calls meanwhile are answered at once, without an attempt
      await t.call('web__echo', { message: 'x' });
      const during = await t.call('web__echo', { message: 'x' });
      expect(during).toMatchObject({ status: 'error', error: { code: 'tool_error', retryable: true } });
      expect(during.error!.message).toMatch(/could not be reached: it did not answer; next attempt in \d+ ms/);

      server = await startEverythingHttp(port); // back: the backoff timer (or a call after the backoff) connects again
      await vi.waitFor(
        async () =>
          expect(await t.call('web__echo', { message: 'again' })).toMatchObject({
            status: 'completed',
            result: 'Echo: again',
          }),
        { timeout: 5_000, interval: 100 },
      );

      // restarted between two calls: the next call's session is stale (the reference server answers 400), and is
      // initialized again under that same call
      server.kill('SIGKILL');
      await new Promise((r) => server.once('exit', r));
      server = await startEverythingHttp(port);
      expect(await t.call('web__echo', { message: 'fresh session' })).toMatchObject({
        status: 'completed',
        result: 'Echo: fresh session',
      });
      expect(logged.find((l) => l.msg.includes('session stale'))).toMatchObject({
        fields: { mcpServer: 'web', status: 400 },
      });
    } finally {
      await t.mcp.close();
      server.kill();
    }
  });
});
