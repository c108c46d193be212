import { parseArgs } from 'node:util';
import type { RunRequestInput } from '@agentloop/protocol';
import { COMMON_OPTIONS, UsageError, printJson, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';
import { followToExit } from './follow-to-exit.js';
import { promptDecisions } from './inline-decisions.js';

const RUN_OPTIONS = {
  tools: { type: 'string' },
  model: { type: 'string', default: process.env.AGENTLOOP_MODEL ?? 'openai/gpt-4o-mini' },
  fallbacks: { type: 'string' },
  strategy: { type: 'string' },
  mode: { type: 'string' },
  system: { type: 'string' },
  follow: { type: 'boolean', short: 'f', default: false },
  'max-iterations': { type: 'string' },
  /** How long --follow keeps reconnecting a lost event stream that brings no event before it gives up (exit 5). */
  'reconnect-ms': { type: 'string', default: '60000' },
} as const;

export const RUN = {
  name: 'run',
  usage: `agentloop run "<prompt>" [--tools a,b] [--model provider/name] [--fallbacks p/name,p/name] [--strategy react]
    [--mode headless] [--system text] [--max-iterations N] [--follow [--reconnect-ms 60000]] [--json]
  without --follow: prints the new run's id (--json: {"id","status","eventsUrl"}); with it: renders the run's events
  to its end (--json: one envelope per line), asking for decisions inline in a terminal, reconnecting a lost event
  stream (Last-Event-ID, backoff) for up to --reconnect-ms without an event, and exits with how it ended`,
  options: RUN_OPTIONS,
  args: ['prompt'],
} as const;

const modelSpec = (s: string) => {
  const [provider, ...name] = s.trim().split('/');
  return { provider, name: name.join('/') };
};
const list = (s: string | undefined) =>
  s
    ? s
        .split(',')
        .map((t) => t.trim())
        .filter(Boolean)
    : [];

type RunValues = ReturnType<typeof parseArgs<{ options: typeof RUN_OPTIONS }>>['values'];

/** The RunRequest of `agentloop run`'s arguments (the server validates it, and applies the defaults left out). */
function runRequestOf(values: RunValues, positionals: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {
    input: positionals.join(' ').trim(),
    model: modelSpec(values.model!),
    tools: list(values.tools),
  };
  if (values.fallbacks) body.fallbacks = list(values.fallbacks).map(modelSpec);
  if (values.strategy) body.strategy = values.strategy;
  if (values.mode) body.mode = values.mode;
  if (values.system) body.system = values.system;
  if (values['max-iterations']) body.limits = { maxIterations: Number(values['max-iterations']) };
  return body;
}

/**
 * The RunRequest of `agentloop run "<prompt>" [--model p/name] [--fallbacks p/name,p/name] [--tools a,b]
 * [--strategy react] [--mode headless] [--system ...] [--max-iterations N]`.
 */
export function runRequestFromArgs(args: string[]) {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...COMMON_OPTIONS, ...RUN_OPTIONS },
  });
  return { prompt: positionals.join(' ').trim(), body: runRequestOf(values, positionals), values };
}

/** `agentloop run "<prompt>" --tools a,b --follow`: creates a run and, with --follow, prints its events to its end (exit codes: EXIT). */
export function runCommand(args: string[]): Promise<number> {
  return executeCommand(RUN, args, async ({ values, positionals, client, json }) => {
    const body = runRequestOf(values, positionals);
    if (!body.input) throw new UsageError('a prompt is required');
    const reconnectMs = Number(values['reconnect-ms']);
    if (!Number.isInteger(reconnectMs) || reconnectMs < 0)
      throw new UsageError('--reconnect-ms takes a number of milliseconds');
    const created = await client.runs.create(body as unknown as RunRequestInput);
    if (!values.follow) {
      if (json) printJson(created);
      else console.log(created.id);
      return EXIT.completed;
    }
    // in JSON mode stdout is for the events only: decisions are made with approve / deny / submit
    const onPaused = json
      ? undefined
      : (pending: Parameters<typeof promptDecisions>[2]) => promptDecisions(client, created.id, pending);
    return followToExit(client, created.id, { name: 'run', json, reconnectMs, ...(onPaused ? { onPaused } : {}) });
  });
}
