import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { ToolErrorCodeSchema } from '@agentloop/protocol';
import { z } from 'zod';
import { ToolFailure, type ToolContext, type ToolDefinition } from '../tool-definition.js';

/** What bounds an isolated call besides its timeout (SPEC §6 leaves the figure to the operator). */
export interface IsolationLimits {
  /** The child's V8 heap (`--max-old-space-size`): past it the child is stopped and the call is a tool_error. */
  memoryMb: number;
}

export const DEFAULT_ISOLATION_MEMORY_MB = 256;

/** AGENTLOOP_ISOLATION_MEMORY_MB, checked at start: an integer from 16 to 65536 [256]. */
export function isolationLimits(env: Record<string, string | undefined>): IsolationLimits {
  const raw = env.AGENTLOOP_ISOLATION_MEMORY_MB;
  if (raw === undefined || raw.trim() === '') return { memoryMb: DEFAULT_ISOLATION_MEMORY_MB };
  const parsed = z.coerce.number().int().min(16).max(65_536).safeParse(raw.trim());
  if (!parsed.success)
    throw new Error(
      `AGENTLOOP_ISOLATION_MEMORY_MB: '${raw.slice(0, 32)}' is not a whole number of megabytes from 16 to 65536`,
    );
  return { memoryMb: parsed.data };
}

const ChildMessageSchema = z.discriminatedUnion('t', [
  z.object({ t: z.literal('result'), value: z.unknown() }),
  z.object({
    t: z.literal('error'),
    message: z.string(),
    code: z.string().optional(),
    retryable: z.boolean().optional(),
  }),
  z.object({ t: z.literal('log'), level: z.enum(['info', 'warn', 'error', 'debug']), args: z.array(z.unknown()) }),
]);

// the compiled child in dist; in tests (sources run as they are) Node strips the types of the .ts itself
const here = fileURLToPath(new URL('.', import.meta.url));
const CHILD_ENTRY =
  ['child-entry.js', 'child-entry.ts'].map((f) => here + f).find((f) => existsSync(f)) ?? `${here}child-entry.js`;

/** How much of a child's stderr is kept to say why it died (V8's out-of-memory report is in its last lines). */
const STDERR_TAIL = 8_192;
const OUT_OF_MEMORY = /heap out of memory|Reached heap limit|Allocation failed/;

/** One child process: started ahead of its call (its module imported meanwhile), runs that one call, is killed. */
class ToolProcess {
  private readonly child: ChildProcess;
  private stderrTail = '';
  private readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null; error?: Error }>;

  constructor(
    modulePath: string,
    private readonly limits: IsolationLimits,
  ) {
    this.child = fork(CHILD_ENTRY, [modulePath], {
      execArgv: [`--max-old-space-size=${limits.memoryMb}`],
      stdio: ['ignore', 'inherit', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child.stderr!.on('data', (d: Buffer) => {
      process.stderr.write(d);
      this.stderrTail = (this.stderrTail + d.toString()).slice(-STDERR_TAIL);
    });
    let spawnError: Error | undefined;
    this.child.on('error', (e) => (spawnError ??= e));
    // 'close': after the child's stderr is read to its end (the report of a heap out of memory included)
    this.closed = new Promise((resolve) =>
      this.child.once('close', (code, signal) =>
        resolve({ code, signal, ...(spawnError ? { error: spawnError } : {}) }),
      ),
    );
    this.setRef(false); // a child waiting for its call keeps no runner alive
  }

  private setRef(on: boolean): void {
    const handles = [this.child, this.child.channel, this.child.stderr] as Array<
      { ref?: () => void; unref?: () => void } | null | undefined
    >;
    for (const h of handles) (on ? h?.ref : h?.unref)?.call(h);
  }

  /** Whether the child still runs (a spare can die while it waits: the OOM killer, an operator's kill). */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  kill(): void {
    if (this.running) this.child.kill('SIGKILL');
  }

  /** Runs the call in the child; settles with its result or a ToolFailure, or the signal's reason once it aborts (the child killed at once). */
  call(tool: string, args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    this.setRef(true);
    return new Promise<unknown>((resolve, reject) => {
      let over = false;
      const finish = (settle: () => void) => {
        if (over) return;
        over = true;
        ctx.signal.removeEventListener('abort', onAbort);
        this.child.off('message', onMessage);
        this.kill();
        this.setRef(false);
        settle();
      };
      const onAbort = () => {
        // killed hard: a tool that spins or blocks cannot be asked to stop
        if (this.child.connected)
          this.child.send(
            { t: 'abort', reason: String((ctx.signal.reason as Error | undefined)?.message ?? 'aborted') },
            () => undefined,
          );
        finish(() => reject(ctx.signal.reason));
      };
      const onMessage = (raw: unknown) => {
        const m = ChildMessageSchema.safeParse(raw);
        if (!m.success)
          return finish(() =>
            reject(new ToolFailure('tool_error', "the tool's process sent a message that is not an answer")),
          );
        if (m.data.t === 'log') return (ctx.logger[m.data.level] as (...a: unknown[]) => void)(...m.data.args);
        if (m.data.t === 'result') {
          const { value } = m.data;
          return finish(() => resolve(value));
        }
        const code = ToolErrorCodeSchema.safeParse(m.data.code);
        const { message, retryable } = m.data;
        finish(() => reject(code.success ? new ToolFailure(code.data, message, retryable) : new Error(message)));
      };
      if (ctx.signal.aborted) return onAbort();
      ctx.signal.addEventListener('abort', onAbort, { once: true });
      this.child.on('message', onMessage);
      void this.closed.then((how) => finish(() => reject(this.died(how))));
      const { runId, callId, tenantId, idempotencyKey } = ctx;
      if (this.child.connected)
        this.child.send({ t: 'call', tool, args, ctx: { runId, callId, tenantId, idempotencyKey } }, () => undefined);
    });
  }

  /** Why a child ended before it answered, as the call's error. */
  private died(how: { code: number | null; signal: NodeJS.Signals | null; error?: Error }): ToolFailure {
    if (how.error)
      return new ToolFailure('tool_error', `the tool's process could not be started: ${how.error.message}`);
    if (OUT_OF_MEMORY.test(this.stderrTail))
      return new ToolFailure(
        'tool_error',
        `the tool ran out of memory: its process may use ${this.limits.memoryMb} MB of heap (AGENTLOOP_ISOLATION_MEMORY_MB) and was stopped`,
        false,
      );
    if (how.signal)
      return new ToolFailure('tool_error', `the tool's process was killed by ${how.signal} before it answered`, false);
    return new ToolFailure(
      'tool_error',
      `the tool's process exited with code ${how.code ?? '?'} before it answered`,
      false,
    );
  }
}

/**
 * The isolated tools of one module (SPEC §6, `isolation: "process"`): every call runs in a child process of its own,
 * with a heap limit, killed when its call is over, times out or is cancelled. One child is kept started ahead of the
 * next call (its module already imported; started when a call ends), so a call pays a message round trip, not a
 * process start: the first call after start, one that follows another within a child's start-up time, and calls
 * beyond the first of a burst wait for a child of their own.
 */
export class IsolatedModule {
  private spare: ToolProcess | null = null;
  private closed = false;

  constructor(
    private readonly modulePath: string,
    private readonly limits: IsolationLimits,
  ) {}

  /** The `execute` the registry holds for the module's tool `name`. */
  executor(name: string): ToolDefinition['execute'] {
    return (args, ctx) => this.run(name, args, ctx);
  }

  private run(name: string, args: Record<string, unknown>, ctx: ToolContext): Promise<unknown> {
    if (this.closed) return Promise.reject(new ToolFailure('tool_error', 'the tool-runner is stopping', true));
    const child = this.spare?.running ? this.spare : new ToolProcess(this.modulePath, this.limits);
    this.spare = null;
    // the next call's child starts once this call is over: a node start takes both cores for a while, and the call
    // in flight would wait behind it
    const call = child.call(name, args, ctx);
    call.then(this.prepare, this.prepare);
    return call;
  }

  private readonly prepare = () => {
    if (!this.closed && !this.spare?.running) this.spare = new ToolProcess(this.modulePath, this.limits);
  };

  /** Kills the child kept ready (calls in flight end with their own). */
  close(): void {
    this.closed = true;
    this.spare?.kill();
    this.spare = null;
  }
}
