import { parseArgs } from 'node:util';
import { EventRenderer } from './render-events.js';
import { AgentloopError, followRun } from '@agentloop/client';
import { promptDecisions } from './inline-decisions.js';
import type { PendingCall } from '@agentloop/protocol';
import { EXIT } from './exit-codes.js';

const RUN_OPTIONS = {
  tools: { type: 'string' },
  model: { type: 'string', default: process.env.AGENTLOOP_MODEL ?? 'openai/gpt-4o-mini' },
  fallbacks: { type: 'string' },
  strategy: { type: 'string' },
  mode: { type: 'string' },
  system: { type: 'string' },
  follow: { type: 'boolean', default: false },
  url: { type: 'string', default: process.env.AGENTLOOP_URL ?? 'http://127.0.0.1:8080' },
  key: { type: 'string', default: process.env.AGENTLOOP_API_KEY },
  'max-iterations': { type: 'string' },
  /** How long --follow keeps reconnecting a lost event stream that brings no event before it gives up (exit 5). */
  'reconnect-ms': { type: 'string', default: '60000' },
  help: { type: 'boolean', short: 'h', default: false },
} as const;

export const RUN_USAGE = `agentloop run "<prompt>" [--tools a,b] [--model provider/name] [--fallbacks p/name,p/name] [--strategy react]
    [--mode headless] [--system text] [--max-iterations N] [--follow [--reconnect-ms 60000]] [--url URL] [--key KEY]
  without --follow: prints the new run's id; with it: renders the run's events to its end, reconnecting a lost
  event stream (Last-Event-ID, backoff) for up to --reconnect-ms without an event, and exits with how it ended`;

const modelSpec = (s: string) => {
  const [provider, ...name] = s.trim().split('/');
  return { provider, name: name.join('/') };
};
const list = (s: string | undefined) => (s ? s.split(',').map((t) => t.trim()).filter(Boolean) : []);

/**
 * The RunRequest of `agentloop run "<prompt>" [--model p/name] [--fallbacks p/name,p/name] [--tools a,b]
 * [--strategy react] [--mode headless] [--system ...] [--max-iterations N]` (the server validates it).
 */
export function runRequestFromArgs(args: string[]) {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: RUN_OPTIONS });
  const prompt = positionals.join(' ').trim();
  const body: Record<string, unknown> = { input: prompt, model: modelSpec(values.model!), tools: list(values.tools) };
  if (values.fallbacks) body.fallbacks = list(values.fallbacks).map(modelSpec);
  if (values.strategy) body.strategy = values.strategy;
  if (values.mode) body.mode = values.mode;
  if (values.system) body.system = values.system;
  if (values['max-iterations']) body.limits = { maxIterations: Number(values['max-iterations']) };
  return { prompt, body, values };
}

/** `agentloop run "<prompt>" --tools a,b --follow`: create a run over HTTP and render its events live (exit codes: EXIT). */
export async function runCommand(args: string[], usage: string = RUN_USAGE): Promise<number> {
  const { prompt, body, values } = runRequestFromArgs(args);
  if (values.help) {
    console.log(usage);
    return EXIT.completed;
  }
  const reconnectMs = Number(values['reconnect-ms']);
  if (!prompt || !Number.isInteger(reconnectMs) || reconnectMs < 0) {
    console.error(`agentloop run: ${prompt ? '--reconnect-ms takes a number of milliseconds' : 'a prompt is required'}\n${usage}`);
    return EXIT.usage;
  }
  const headers: Record<string, string> = values.key ? { authorization: `Bearer ${values.key}` } : {};
  const res = await fetch(`${values.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const created = (await res.json()) as { id?: string; error?: { code: string; message: string; details?: unknown } };
  if (!res.ok || !created.id) {
    console.error(`agentloop run: HTTP ${res.status} ${created.error?.code}: ${created.error?.message}${created.error?.details ? `\n${JSON.stringify(created.error.details, null, 2)}` : ''}`);
    return EXIT.error;
  }
  if (!values.follow) {
    console.log(created.id);
    return EXIT.completed;
  }
  return followToEnd(values.url!, values.key, created.id, reconnectMs);
}

const EXIT_OF_TERMINAL: Record<string, number> = { 'run.completed': EXIT.completed, 'run.failed': EXIT.failed, 'run.cancelled': EXIT.cancelled };

/** Renders the run's events until its terminal event; the exit code says how it ended, or that it could not be followed. */
async function followToEnd(url: string, key: string | undefined, runId: string, reconnectMs: number): Promise<number> {
  const renderer = new EventRenderer();
  const eventsUrl = `${url}/v1/runs/${runId}/events`;
  let last = 0;
  try {
    const events = followRun(eventsUrl, {
      headers: key ? { authorization: `Bearer ${key}` } : {},
      maxReconnectMs: reconnectMs,
      maxAttempts: Number.POSITIVE_INFINITY, // --reconnect-ms is the bound a user sets
      onReconnect: (r) => console.error(`agentloop run: event stream lost after event ${r.lastSeq} (${r.reason}); reconnecting in ${r.delayMs} ms (attempt ${r.attempt})`),
    });
    for await (const e of events) {
      last = e.seq;
      renderer.render(e);
      if (Object.hasOwn(EXIT_OF_TERMINAL, e.type)) return EXIT_OF_TERMINAL[e.type]!;
      if (e.type === 'run.paused') await promptDecisions(url, key, runId, (e.data as { pending: PendingCall[] }).pending);
    }
    console.error(`agentloop run: the server says run ${runId} has ended, but its last event did not arrive (after event ${last})`);
  } catch (err) {
    const why = err instanceof AgentloopError ? `HTTP ${err.status} ${err.code}: ${err.message}` : err instanceof Error ? err.message : String(err);
    console.error(`agentloop run: could not follow run ${runId} to its end: ${why}`);
  }
  console.error(`agentloop run: the run may still be going: GET ${eventsUrl} with Last-Event-ID: ${last} resumes its events`);
  return EXIT.unfollowable;
}
