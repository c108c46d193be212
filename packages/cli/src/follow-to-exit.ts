import { AgentloopError, type AgentloopClient } from '@agentloop/client';
import type { EventEnvelope, PendingCall, RunStatus } from '@agentloop/protocol';
import { describeError, reportError } from './command.js';
import { EXIT } from './exit-codes.js';
import { EventRenderer } from './render-events.js';

const EXIT_OF_TERMINAL: Record<string, number> = {
  'run.completed': EXIT.completed,
  'run.failed': EXIT.failed,
  'run.cancelled': EXIT.cancelled,
};
const EXIT_OF_STATUS: Partial<Record<RunStatus, number>> = {
  completed: EXIT.completed,
  failed: EXIT.failed,
  cancelled: EXIT.cancelled,
};

export interface FollowToExitOptions {
  /** The command, for messages (`run`, `runs events`). */
  name: string;
  /** JSON lines (one envelope each) instead of the rendering. */
  json: boolean;
  /** How long to keep reconnecting a lost stream that brings no event before giving up (exit 5). */
  reconnectMs: number;
  /** Start after this event. */
  after?: number;
  /** Called when the run pauses, before the next event is read (e.g. to ask for the decisions). */
  onPaused?: (pending: PendingCall[]) => Promise<void>;
}

/**
 * Prints a run's events (rendered, or JSON lines) until its terminal event, and returns the exit code that says how
 * it ended: 0 completed, 3 failed, 4 cancelled, 5 could not be followed to its end (the run may still be going); 1
 * when the api refuses the stream (401, 404).
 */
export async function followToExit(client: AgentloopClient, runId: string, opts: FollowToExitOptions): Promise<number> {
  const renderer = new EventRenderer();
  const print = opts.json
    ? (e: EventEnvelope) => console.log(JSON.stringify(e))
    : (e: EventEnvelope) => renderer.render(e);
  let last = opts.after ?? 0;
  try {
    const events = client.runs.events(runId, {
      after: last,
      maxReconnectMs: opts.reconnectMs,
      maxAttempts: Number.POSITIVE_INFINITY, // the time bound is the one a user sets
      onReconnect: (r) =>
        console.error(
          `agentloop ${opts.name}: event stream lost after event ${r.lastSeq} (${r.reason}); reconnecting in ${r.delayMs} ms (attempt ${r.attempt})`,
        ),
    });
    for await (const e of events) {
      last = e.seq;
      print(e);
      if (Object.hasOwn(EXIT_OF_TERMINAL, e.type)) return EXIT_OF_TERMINAL[e.type]!;
      if (e.type === 'run.paused' && opts.onPaused) await opts.onPaused((e.data as { pending: PendingCall[] }).pending);
    }
    // the server had nothing after `after`: the run ended at or before it, and its snapshot says how
    const ended = EXIT_OF_STATUS[(await client.runs.get(runId)).status];
    if (ended !== undefined) return ended;
    console.error(
      `agentloop ${opts.name}: the event stream of run ${runId} ended after event ${last}, before the run did`,
    );
  } catch (err) {
    if (err instanceof AgentloopError && err.status !== 0) {
      reportError(opts.name, err, opts.json); // a final answer (401, 404): not a lost stream
      return EXIT.error;
    }
    console.error(`agentloop ${opts.name}: could not follow run ${runId} to its end: ${describeError(err)}`);
  }
  console.error(
    `agentloop ${opts.name}: the run may still be going: \`agentloop runs events ${runId} --follow --after ${last}\` resumes its events`,
  );
  return EXIT.unfollowable;
}
