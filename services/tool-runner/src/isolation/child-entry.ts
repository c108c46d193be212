// The child process of one isolated call (SPEC §6, `isolation: "process"`). The tool-runner forks it with the tool
// module's path as its argument, ahead of the call: it imports the module at once, then waits for one `call`
// message, runs the named tool and sends back its result, a thrown error, or its logger's lines. The parent kills it
// when the call is over, timed out or cancelled. Only node: imports and erasable TypeScript (Node runs the .ts
// itself in tests): this file is the whole program of the child.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

interface CallMessage {
  t: 'call';
  tool: string;
  args: Record<string, unknown>;
  ctx: { runId: string; callId: string; tenantId: string; idempotencyKey: string };
}
type ParentMessage = CallMessage | { t: 'abort'; reason: string };
type Definition = { name?: unknown; execute?: (args: Record<string, unknown>, ctx: unknown) => unknown };

const modulePath = process.argv[2] ?? '';
const controller = new AbortController();

const send = (m: unknown): Promise<void> =>
  new Promise((resolve) => {
    if (!process.connected || !process.send) return resolve();
    process.send(m, undefined, undefined, () => resolve());
  });

const describe = (e: unknown): string =>
  e instanceof Error ? `${e.name === 'Error' ? '' : `${e.name}: `}${e.message}` : String(e);

/** A thrown error as the parent rebuilds it: a ToolFailure keeps its code (the class is not shared across processes). */
const errorMessage = (e: unknown, prefix = '') => {
  const failure =
    e instanceof Error && e.constructor.name === 'ToolFailure'
      ? (e as Error & { code?: unknown; retryable?: unknown })
      : null;
  return {
    t: 'error',
    message: `${prefix}${failure ? failure.message : describe(e)}`,
    ...(failure && typeof failure.code === 'string' ? { code: failure.code } : {}),
    ...(failure && typeof failure.retryable === 'boolean' ? { retryable: failure.retryable } : {}),
  };
};

/** Logged values travel as JSON: an Error as its name, message and stack; anything else unserializable as text. */
const loggable = (a: unknown): unknown => {
  if (a instanceof Error) return { name: a.name, message: a.message, stack: a.stack };
  try {
    JSON.stringify(a);
    return a;
  } catch {
    return String(a);
  }
};
const log =
  (level: string) =>
  (...args: unknown[]) =>
    void send({ t: 'log', level, args: args.map(loggable) });

// imported before any call (the parent starts this child ahead of time); a failure is the call's answer
const loaded: Promise<unknown> = import(pathToFileURL(path.resolve(modulePath)).href).then(
  (m: { default?: unknown }) => m.default,
);
loaded.catch(() => undefined);

async function runCall(m: CallMessage): Promise<void> {
  let defs: unknown;
  try {
    defs = await loaded;
  } catch (e) {
    return end(errorMessage(e, `the tool's module failed to load in its process: `), 0);
  }
  const def = Array.isArray(defs) ? (defs as Definition[]).find((d) => d?.name === m.tool) : undefined;
  if (!def || typeof def.execute !== 'function')
    return end({ t: 'error', message: `the tool's module has no tool ${m.tool} in its process` }, 0);
  let result: unknown;
  try {
    result = await def.execute(m.args, {
      ...m.ctx,
      signal: controller.signal,
      logger: { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') },
    });
  } catch (e) {
    return end(errorMessage(e), 0);
  }
  try {
    JSON.stringify(result);
  } catch {
    return end({ t: 'error', message: 'the tool returned a value that is not JSON-serializable' }, 0);
  }
  return end({ t: 'result', value: result }, 0);
}

/** The last message of this child: sent, then the process ends (the parent kills it too, whichever comes first). */
async function end(m: unknown, code: number): Promise<void> {
  await send(m);
  process.exit(code);
}

process.on('message', (raw: ParentMessage) => {
  if (raw.t === 'call') void runCall(raw);
  else if (raw.t === 'abort') controller.abort(new Error(raw.reason));
});
// a parent that went away (killed, even with kill -9) takes its children with it: nothing would read their answer
process.on('disconnect', () => process.exit(0));
process.on('uncaughtException', (e) => void end(errorMessage(e, 'the tool crashed: '), 1));
process.on('unhandledRejection', (e) => void end(errorMessage(e, 'the tool crashed (an unhandled rejection): '), 1));
