import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { RawAgentLoop } from './raw-agent-loop.js';
import { RawInlineLoop } from './raw-inline-loop.js';
import { AgentsSdkLoop } from './agents-sdk-loop.js';
import { DurableFloorLoop } from './durable-floor-loop.js';
import { rawModel } from './raw-model-call.js';
import { MODELS, RAW_API, type Provider } from './providers.js';
import { ProductLoop, type LoopEnv } from './product-loop.js';
import { gcFairWindows, measureWindow, type Loop, type WindowCpu } from './loop-window.js';
import { callgrindExec } from './callgrind.js';

/**
 * `local`: the product with the core tool local (SPEC §6); `inline`: the raw loop with the tool run in the iteration
 * job; `sdk`: the in-process OpenAI Agents SDK (issue 26's peers).
 */
export type LoopKind = 'raw' | 'floor' | 'product' | 'local' | 'inline' | 'sdk';
export interface LoopSpec extends LoopEnv {
  kind: LoopKind;
  provider: Provider;
  /** The loop's own key prefix in the bench's Redis. */
  prefix: string;
}

/** A loop the core figures drive: warmed up, then measured window by window (`arm` resets Redis' counters). */
export interface BenchLoop {
  /** Unmeasured by Redis and never profiled: what a fresh process pays while its JIT warms up. */
  warmup(runs: number, parallel: number, name: string): Promise<WindowCpu>;
  window(runs: number, parallel: number, name: string, arm: () => Promise<unknown>): Promise<WindowCpu>;
  close(): Promise<void>;
}

/** Builds and starts the loop `spec` names, in this process. */
async function startLoop(spec: LoopSpec): Promise<{ loop: Loop; close(): Promise<void> }> {
  if (spec.kind === 'product' || spec.kind === 'local') {
    const product = new ProductLoop(
      spec.kind === 'local' ? { ...spec, toolsModule: spec.localToolsModule } : spec,
      spec.prefix,
      spec.provider,
    );
    await product.start();
    return { loop: product, close: () => product.close() };
  }
  if (spec.kind === 'sdk') {
    if (spec.provider !== 'openai')
      throw new Error('the Agents SDK loop runs on Chat Completions only (--provider openai)');
    return { loop: new AgentsSdkLoop(spec.mockUrl, MODELS.openai.name, spec.prior), close: async () => {} };
  }
  const tools = [{ name: 'noop', description: 'does nothing', parameters: { type: 'object' } }];
  const bull = new Redis(spec.redisUrl, { maxRetriesPerRequest: null });
  const model = await rawModel(RAW_API[spec.provider], spec.mockUrl, MODELS[spec.provider].name, tools);
  const loop =
    spec.kind === 'raw'
      ? new RawAgentLoop(bull, spec.prefix, model, spec.prior, spec.concurrency)
      : spec.kind === 'inline'
        ? new RawInlineLoop(bull, spec.prefix, model, spec.prior, spec.concurrency.orchestrator)
        : new DurableFloorLoop(bull, spec.prefix, model, spec.prior, spec.concurrency);
  await loop.start();
  return {
    loop,
    close: async () => {
      await loop.close();
      bull.disconnect();
    },
  };
}

/** A loop in the bench's own process (BENCH_CORE_SHARED=1: every loop in one process, as before session 8). */
export async function localLoop(spec: LoopSpec): Promise<BenchLoop> {
  gcFairWindows();
  const host = await startLoop(spec);
  return {
    warmup: (runs, parallel, name) => measureWindow(host.loop, runs, parallel, name, async () => {}, false),
    window: (runs, parallel, name, arm) =>
      measureWindow(host.loop, runs, parallel, name, async () => void (await arm())),
    close: () => host.close(),
  };
}

type Command =
  | { op: 'start'; spec: LoopSpec }
  | { op: 'warmup' | 'window'; runs: number; parallel: number; name: string }
  | { op: 'close' };
type Request = ({ id: number } & Command) | { id: number; op: 'go' };
type Reply = { id: number } & ({ op: 'done'; cpu?: WindowCpu } | { op: 'armed' } | { op: 'failed'; message: string });

// the built module, also when this one runs from source (tests): a child process runs JavaScript
const HOST_MAIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../dist/loop-host.js');

/**
 * A loop in a process of its own, as a deployment runs it: no other loop's garbage in its heap and no other loop's
 * types in the JIT feedback of the code they share (ioredis, BullMQ, the SDKs). The process measures its own CPU;
 * the bench measures Redis.
 */
export async function forkedLoop(spec: LoopSpec): Promise<BenchLoop> {
  const callgrind = callgrindExec(process.execArgv);
  const child: ChildProcess = fork(HOST_MAIN, ['--loop-host'], {
    ...(callgrind ?? { execArgv: process.execArgv }),
    env: callgrind ? { ...process.env, BENCH_CALLGRIND_CHILD: '1' } : process.env,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let next = 0;
  const waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void; onArmed?: () => void }>();
  child.on('message', (r: Reply) => {
    const w = waiting.get(r.id);
    if (!w) return;
    if (r.op === 'armed') return w.onArmed?.();
    waiting.delete(r.id);
    if (r.op === 'failed') w.reject(new Error(`${spec.kind} loop process: ${r.message}`));
    else w.resolve(r);
  });
  // 'close', not 'exit': it comes after the last message the process sent was read
  child.once('close', (code) => {
    for (const w of waiting.values()) w.reject(new Error(`${spec.kind} loop process exited (${code})`));
    waiting.clear();
  });
  child.on('error', (err) => console.error(`${spec.kind} loop process:`, err));
  const request = (msg: Command, onArmed?: (id: number) => void) =>
    new Promise<Reply>((resolve, reject) => {
      if (!child.connected) return reject(new Error(`${spec.kind} loop process: gone`));
      const id = ++next;
      waiting.set(id, { resolve, reject, onArmed: onArmed && (() => onArmed(id)) });
      child.send({ ...msg, id }, (err) => {
        if (!err) return;
        waiting.delete(id);
        reject(err);
      });
    });
  try {
    await request({ op: 'start', spec });
  } catch (err) {
    child.kill(); // a loop that could not start leaves nothing running
    throw err;
  }
  return {
    warmup: async (runs, parallel, name) =>
      ((await request({ op: 'warmup', runs, parallel, name })) as Extract<Reply, { op: 'done' }>).cpu!,
    window: async (runs, parallel, name, arm) => {
      const r = await request(
        { op: 'window', runs, parallel, name },
        (id) =>
          void arm().then(
            () => child.connected && child.send({ op: 'go', id }),
            (err: unknown) => {
              console.error(`${spec.kind} loop: arming the window failed`, err);
              child.kill(); // the window cannot open: its request fails with the process
            },
          ),
      );
      return (r as Extract<Reply, { op: 'done' }>).cpu!;
    },
    // never throws: the bench closes every loop, whatever became of one of them
    close: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      const timer = setTimeout(() => child.kill(), 30_000);
      await request({ op: 'close' }).catch(() => child.kill());
      await exited;
      clearTimeout(timer);
    },
  };
}

/** The child's side: one loop, driven over IPC. */
function serveLoop(): void {
  process.on('disconnect', () => process.exit(1)); // the bench is gone: its loop goes too
  let host: Awaited<ReturnType<typeof startLoop>> | null = null;
  const armed = new Map<number, () => void>();
  const reply = (r: Reply) => process.send!(r);
  process.on('message', (m: Request) => {
    if (m.op === 'go') return armed.get(m.id)?.();
    const work = async (): Promise<WindowCpu | undefined> => {
      switch (m.op) {
        case 'start':
          host = await startLoop(m.spec);
          return undefined;
        case 'warmup':
          return measureWindow(host!.loop, m.runs, m.parallel, m.name, async () => {}, false);
        case 'window':
          return measureWindow(
            host!.loop,
            m.runs,
            m.parallel,
            m.name,
            () =>
              new Promise<void>((resolve) => {
                armed.set(m.id, resolve);
                reply({ id: m.id, op: 'armed' });
              }),
          );
        case 'close':
          await host?.close();
          return undefined;
      }
    };
    work().then(
      (cpu) => {
        armed.delete(m.id);
        // the loop's kept-alive sockets would keep this process up: it ends once the reply is sent
        process.send!({ id: m.id, op: 'done', cpu } satisfies Reply, () => m.op === 'close' && process.exit(0));
      },
      (err: unknown) =>
        reply({ id: m.id, op: 'failed', message: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
    );
  });
}

if (process.argv[2] === '--loop-host' && process.send) serveLoop();
