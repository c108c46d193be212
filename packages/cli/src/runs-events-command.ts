import { isTerminalStatus, type EventEnvelope } from '@agentloop/protocol';
import { UsageError, executeCommand } from './command.js';
import { EXIT } from './exit-codes.js';
import { followToExit } from './follow-to-exit.js';
import { EventRenderer } from './render-events.js';

/** Without --follow, a live run's stream is taken as caught up once it brings nothing for this long. */
const CAUGHT_UP_QUIET_MS = 1000;

export const RUNS_EVENTS = {
  name: 'runs events',
  usage: `agentloop runs events <run> [--follow [--reconnect-ms 60000]] [--after SEQ] [--json]
  a run's events after SEQ [0]: rendered, or with --json one envelope per line (JSON lines).
  Without --follow: a run that has ended prints its events to the last one; a live run prints what it has so far
  (until its stream has been quiet for ${CAUGHT_UP_QUIET_MS} ms; --after the last seq printed goes on from there).
  With --follow: to the run's end, reconnecting a lost stream (Last-Event-ID, backoff) for up to --reconnect-ms
  without an event; the exit code says how the run ended (0 completed, 3 failed, 4 cancelled, 5 not followed to its end)`,
  options: {
    follow: { type: 'boolean', short: 'f', default: false },
    after: { type: 'string' },
    'reconnect-ms': { type: 'string', default: '60000' },
  },
  args: ['run'],
} as const;

/** `agentloop runs events <run> [--follow] [--after SEQ] [--json]` */
export function runsEventsCommand(args: string[]): Promise<number> {
  return executeCommand(RUNS_EVENTS, args, async ({ values, positionals, client, json }) => {
    const runId = positionals[0]!;
    const after = wholeNumber(values.after ?? '0', '--after');
    const reconnectMs = wholeNumber(values['reconnect-ms'], '--reconnect-ms');
    if (values.follow) return followToExit(client, runId, { name: 'runs events', json, reconnectMs, after });

    const renderer = new EventRenderer();
    const print = json
      ? (e: EventEnvelope) => console.log(JSON.stringify(e))
      : (e: EventEnvelope) => renderer.render(e);
    // an ended run's stream ends at its terminal event; a live one's never does, so it is read until it is quiet
    const live = !isTerminalStatus((await client.runs.get(runId)).status);
    const caughtUp = new AbortController();
    let quiet: ReturnType<typeof setTimeout> | undefined;
    const restartQuiet = () => {
      clearTimeout(quiet);
      if (live) quiet = setTimeout(() => caughtUp.abort(new CaughtUp()), CAUGHT_UP_QUIET_MS);
    };
    restartQuiet();
    try {
      for await (const e of client.runs.events(runId, { after, signal: caughtUp.signal })) {
        print(e);
        restartQuiet();
      }
    } catch (err) {
      if (!(caughtUp.signal.reason instanceof CaughtUp)) throw err;
    } finally {
      clearTimeout(quiet);
    }
    return EXIT.completed;
  });
}

class CaughtUp extends Error {}

function wholeNumber(value: string, option: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n))
    throw new UsageError(`${option} takes a whole number, not ${JSON.stringify(value)}`);
  return n;
}
