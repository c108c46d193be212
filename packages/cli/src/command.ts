import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { AgentloopClient, AgentloopError, FollowError } from '@agentloop/client';
import { EXIT } from './exit-codes.js';

/** Options of every command that talks to the api. */
export const COMMON_OPTIONS = {
  url: { type: 'string', default: process.env.AGENTLOOP_URL ?? 'http://127.0.0.1:8080' },
  key: { type: 'string', default: process.env.AGENTLOOP_API_KEY },
  json: { type: 'boolean', default: false },
  help: { type: 'boolean', short: 'h', default: false },
} as const satisfies ParseArgsOptionsConfig;

export const COMMON_HELP = `common options:
  --url URL    the api [AGENTLOOP_URL, else http://127.0.0.1:8080]
  --key KEY    API key, sent as Authorization: Bearer [AGENTLOOP_API_KEY]
  --json       machine output on stdout: one JSON document (JSON lines for event streams); errors as {"error":...} on stderr
  -h, --help   this help`;

export interface CommandSpec<O extends ParseArgsOptionsConfig> {
  /** As typed after `agentloop`, e.g. `runs get`. */
  name: string;
  /** Usage line(s) and what the command does (the common options are added). */
  usage: string;
  options: O;
  /** Names of the positional arguments it requires, in order. */
  args?: readonly string[];
}

type Parsed<O extends ParseArgsOptionsConfig> = ReturnType<
  typeof parseArgs<{ args: string[]; options: typeof COMMON_OPTIONS & O; allowPositionals: true; strict: true }>
>;

export interface CommandContext<O extends ParseArgsOptionsConfig> {
  values: Parsed<O>['values'];
  positionals: string[];
  client: AgentloopClient;
  json: boolean;
  name: string;
}

export const helpOf = (spec: { usage: string }) => `usage: ${spec.usage}\n\n${COMMON_HELP}`;

/**
 * Parses `argv` for `spec` and runs `body` with a client of the api. `--help` prints the usage (exit 0); bad arguments
 * print it to stderr (exit 2); a request the api refused, or that got no answer, is reported (exit 1). A `UsageError`
 * thrown by `body` is bad arguments too.
 */
export async function executeCommand<O extends ParseArgsOptionsConfig>(
  spec: CommandSpec<O>,
  argv: string[],
  body: (ctx: CommandContext<O>) => Promise<number>,
): Promise<number> {
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...COMMON_OPTIONS, ...spec.options },
      allowPositionals: true,
      strict: true,
    }) as never;
  } catch (err) {
    return usageError(spec, (err as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help) {
    console.log(helpOf(spec));
    return EXIT.completed;
  }
  const missing = (spec.args ?? []).slice(positionals.length);
  if (missing.length) return usageError(spec, `missing ${missing.map((a) => `<${a}>`).join(' ')}`);
  const json = Boolean(values.json);
  const client = new AgentloopClient({
    baseUrl: String(values.url),
    apiKey: (values.key as string | undefined) ?? null,
  });
  try {
    return await body({ values: values as Parsed<O>['values'], positionals, client, json, name: spec.name });
  } catch (err) {
    if (err instanceof UsageError) return usageError(spec, err.message);
    reportError(spec.name, err, json);
    return EXIT.error;
  }
}

/** Bad arguments found while running a command: its usage is printed, exit 2. */
export class UsageError extends Error {}

function usageError(spec: { name: string; usage: string }, message: string): number {
  console.error(
    `agentloop ${spec.name}: ${message}\nusage: ${spec.usage}\n(\`agentloop ${spec.name} --help\` for the common options)`,
  );
  return EXIT.usage;
}

/** One line saying what went wrong (with the api's details), or the error as JSON on stderr for --json. */
export function reportError(name: string, err: unknown, json: boolean): void {
  if (json) {
    const error =
      err instanceof AgentloopError
        ? {
            status: err.status,
            code: err.code,
            message: err.message,
            ...(err.details !== undefined ? { details: err.details } : {}),
          }
        : { code: 'error', message: err instanceof Error ? err.message : String(err) };
    console.error(JSON.stringify({ error }));
    return;
  }
  console.error(`agentloop ${name}: ${describeError(err)}`);
}

export function describeError(err: unknown): string {
  if (err instanceof AgentloopError) {
    if (err.status === 0) return `cannot reach the api: ${err.message}`;
    return `HTTP ${err.status} ${err.code}: ${err.message}${err.details !== undefined ? `\n${JSON.stringify(err.details, null, 2)}` : ''}`;
  }
  if (err instanceof FollowError) return err.message;
  return err instanceof Error ? err.message : String(err);
}

/** One JSON document on stdout. */
export const printJson = (value: unknown) => console.log(JSON.stringify(value, null, 2));

/** A positive whole number from an option, or a UsageError naming it. */
export function positiveInt(value: string | undefined, option: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new UsageError(`${option} takes a whole number of at least 1, not ${JSON.stringify(value)}`);
  return n;
}

/** A JSON value from an argument, or a UsageError naming it. */
export function jsonArgument(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UsageError(`${what} is not valid JSON: ${text}`);
  }
}
