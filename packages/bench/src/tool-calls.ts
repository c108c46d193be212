import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EVERYTHING_MAIN, freePort, startEverythingHttp } from '@agentloop/testing';
import { McpTools, ToolRegistry, executeToolCall, parseMcpServers } from '@agentloop/tool-runner';
import { percentile } from './stats.js';

/**
 * BENCH_ONLY=tools: what one tool call costs on each way a tool-runner executes it — a module tool in its process, the
 * same tool with `isolation: "process"`, an MCP tool over stdio and over Streamable HTTP (the reference server's
 * `echo`) — against calling that server directly with the SDK in one process. Each through `executeToolCall`, the
 * path every call takes in a runner (validation, timeout, result cap), without Redis: the queue hop is the same for
 * every kind and is in the core figures.
 */
export interface ToolCallFigure {
  kind: string;
  p50: number;
  p99: number;
  /** ms of CPU per call: this process and its children (the isolated calls' and the stdio server). */
  cpuPerCall: number;
  /** calls per second with 20 in flight. */
  perSecond: number;
}

const SEQUENTIAL = Number(process.env.BENCH_TOOL_CALLS ?? 300);
const CONCURRENT = Number(process.env.BENCH_TOOL_CONCURRENT_CALLS ?? 400);
/** The pause between paced isolated calls: long enough for the next call's child to have started (a model turn is longer). */
const PACE_MS = 250;

const TICK_MS = 1000 / 100; // USER_HZ of /proc's times

/** CPU (ms) of this process, its reaped children and its live children (but `exclude`), from /proc. */
export function cpuMs(exclude: ReadonlyArray<number | undefined> = []): number {
  const times = (pid: number | 'self') =>
    fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ').map(Number);
  const self = times('self'); // fields from state: utime at [11], stime [12], cutime [13], cstime [14]
  let ticks = self[11]! + self[12]! + self[13]! + self[14]!;
  const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(process.pid)], { encoding: 'utf8' })
    .split('\n')
    .map(Number)
    .filter((p) => p > 0);
  for (const pid of children.filter((p) => !exclude.includes(p))) {
    try {
      const t = times(pid);
      ticks += t[11]! + t[12]!;
    } catch {
      // gone meanwhile: counted in cutime once reaped
    }
  }
  return ticks * TICK_MS;
}

type Call = () => Promise<unknown>;

async function measure(kind: string, call: Call, paceMs = 0): Promise<ToolCallFigure> {
  for (let i = 0; i < 30; i++) await call();
  const lat: number[] = [];
  const cpu0 = cpuMs();
  const c0 = process.cpuUsage();
  for (let i = 0; i < SEQUENTIAL; i++) {
    if (paceMs) await new Promise((r) => setTimeout(r, paceMs));
    const t0 = performance.now();
    await call();
    lat.push(performance.now() - t0);
  }
  // /proc counts in 10 ms ticks: this process's own share comes from cpuUsage (µs), its children's from /proc
  const own = process.cpuUsage(c0);
  const cpu = (own.user + own.system) / 1000 + Math.max(0, cpuMs() - cpu0 - (own.user + own.system) / 1000);
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 20 }, async () => {
      while (next++ < CONCURRENT) await call();
    }),
  );
  const perSecond = CONCURRENT / ((performance.now() - t0) / 1000);
  return { kind, p50: percentile(lat, 50), p99: percentile(lat, 99), cpuPerCall: cpu / SEQUENTIAL, perSecond };
}

/**
 * The p50 of two ways side by side, call for call (a, b, a, b…), so the machine's load drifts over both alike: what
 * one adds to the other, for the targets.
 */
async function paired(a: Call, b: Call, n: number, paceMs = 0): Promise<[number, number]> {
  const [la, lb]: [number[], number[]] = [[], []];
  for (let i = 0; i < n; i++) {
    for (const [call, lat] of [
      [a, la],
      [b, lb],
    ] as const) {
      if (paceMs) await new Promise((r) => setTimeout(r, paceMs));
      const t0 = performance.now();
      await call();
      lat.push(performance.now() - t0);
    }
  }
  return [percentile(la, 50), percentile(lb, 50)];
}

export interface ToolCallBench {
  figures: ToolCallFigure[];
  /** p50 added by the runner's way over the direct one, measured side by side (ms). */
  added: { stdio: number; http: number; isolatedPaced: number };
}

const ctx = { runId: 'bench', callId: 'c', tenantId: 't', idempotencyKey: 'bench:c', logger: console };
const opts = { maxResultBytes: 1_000_000, maxResultTokens: 10_000 };
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** A call through executeToolCall that must complete (a bench of failures would measure nothing). */
function through(registry: ToolRegistry, name: string): Call {
  const tool = registry.get(name);
  if (!tool) throw new Error(`bench: no tool ${name}`);
  return async () => {
    const out = await executeToolCall(tool, name, '{"message":"bench"}', ctx, new AbortController().signal, opts);
    if (out.status !== 'completed') throw new Error(`bench: ${name} answered ${out.content}`);
  };
}

export async function toolCallBench(): Promise<ToolCallBench> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'agentloop-bench-tools-'));
  const module = path.join(dir, 'echo-tools.mjs');
  const echo = (name: string, isolation: string) =>
    `{ name: '${name}', sideEffect: 'read', isolation: '${isolation}', parameters: { type: 'object', properties: { message: { type: 'string' } } }, execute: (a) => 'Echo: ' + a.message }`;
  fs.writeFileSync(module, `export default [${echo('echo_here', 'none')}, ${echo('echo_isolated', 'process')}];\n`);
  const registry = await ToolRegistry.withModules([module], [], { memoryMb: 256 });
  const port = await freePort();
  const web = await startEverythingHttp(port);
  const servers = [
    { name: 'stdio', command: process.execPath, args: [EVERYTHING_MAIN, 'stdio'], trust: 'trusted' },
    { name: 'web', url: `http://127.0.0.1:${port}/mcp`, trust: 'trusted' },
  ];
  const mcp = await McpTools.start(parseMcpServers(JSON.stringify(servers)), () => true, {
    logger: quiet,
    stderr: 'ignore',
  });
  mcp.attach(registry, async () => undefined);
  const direct = new Client({ name: 'bench', version: '1.0.0' });
  await direct.connect(
    new StdioClientTransport({ command: process.execPath, args: [EVERYTHING_MAIN, 'stdio'], stderr: 'ignore' }),
  );
  const directWeb = new Client({ name: 'bench', version: '1.0.0' });
  await directWeb.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`)));
  const sdk =
    (c: Client): Call =>
    () =>
      c.callTool({ name: 'echo', arguments: { message: 'bench' } });
  const here = through(registry, 'echo_here');
  const isolated = through(registry, 'echo_isolated');
  try {
    const figures = [
      await measure('module tool, in the runner', here),
      await measure('module tool, isolation "process", back to back', isolated),
      await measure(`module tool, isolation "process", a call every ${PACE_MS} ms`, isolated, PACE_MS),
      await measure('server-everything echo, SDK directly, stdio', sdk(direct)),
      await measure('MCP tool stdio__echo (server-everything)', through(registry, 'stdio__echo')),
      await measure('server-everything echo, SDK directly, Streamable HTTP', sdk(directWeb)),
      await measure('MCP tool web__echo (server-everything, Streamable HTTP)', through(registry, 'web__echo')),
    ];
    const diff = ([a, b]: [number, number]) => b - a;
    const added = {
      stdio: diff(await paired(sdk(direct), through(registry, 'stdio__echo'), SEQUENTIAL)),
      http: diff(await paired(sdk(directWeb), through(registry, 'web__echo'), SEQUENTIAL)),
      isolatedPaced: diff(await paired(here, isolated, Math.min(SEQUENTIAL, 100), PACE_MS)),
    };
    return { figures, added };
  } finally {
    await direct.close();
    await directWeb.close();
    await mcp.close();
    registry.close();
    web.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const f2 = (n: number) => n.toFixed(2);

export function toolCallLines({ figures, added }: ToolCallBench): string[] {
  const lines = figures.map(
    (f) =>
      `${f.kind.padEnd(62)} p50 ${f2(f.p50)} ms  p99 ${f2(f.p99)} ms  CPU ${f2(f.cpuPerCall)} ms/call  ${f.perSecond.toFixed(0)} calls/s with 20 in flight`,
  );
  const b2b = figures.find((f) => f.kind.includes('back to back'))!.p50 - figures[0]!.p50;
  return [
    ...lines,
    '',
    'targets (p50 added, measured call for call beside the direct way):',
    `  MCP over stdio, over the SDK alone                  ${f2(added.stdio)} ms  (target ≤ 1.5 ms)  ${added.stdio <= 1.5 ? 'met' : 'MISSED'}`,
    `  MCP over Streamable HTTP, over the SDK alone        ${f2(added.http)} ms  (target ≤ 1.5 ms)  ${added.http <= 1.5 ? 'met' : 'MISSED'}`,
    `  isolated over in-process, a call every ${PACE_MS} ms      ${f2(added.isolatedPaced)} ms  (target < 15 ms)  ${added.isolatedPaced < 15 ? 'met' : 'MISSED'}`,
    `  isolated over in-process, back to back              ${f2(b2b)} ms  (each call waits for the child the call before it started)`,
    `  (load average while measured: ${os
      .loadavg()
      .map((l) => l.toFixed(1))
      .join(', ')} on ${os.cpus().length} cores)`,
  ];
}
