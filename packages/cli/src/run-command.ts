import { parseArgs } from 'node:util';
import { EventRenderer } from './render-events.js';
import { followEvents } from '@agentloop/client';
import { promptDecisions } from './inline-decisions.js';
import type { PendingCall } from '@agentloop/protocol';

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
} as const;

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

/** `agentloop run "<prompt>" --tools a,b --follow`: create a run over HTTP and render its events live. */
export async function runCommand(args: string[]): Promise<number> {
  const { prompt, body, values } = runRequestFromArgs(args);
  if (!prompt) {
    console.error('agentloop run: a prompt is required');
    return 2;
  }
  const headers: Record<string, string> = values.key ? { authorization: `Bearer ${values.key}` } : {};
  const res = await fetch(`${values.url}/v1/runs`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const created = (await res.json()) as { id?: string; error?: { code: string; message: string; details?: unknown } };
  if (!res.ok || !created.id) {
    console.error(`agentloop run: HTTP ${res.status} ${created.error?.code}: ${created.error?.message}${created.error?.details ? `\n${JSON.stringify(created.error.details, null, 2)}` : ''}`);
    return 1;
  }
  if (!values.follow) {
    console.log(created.id);
    return 0;
  }
  const renderer = new EventRenderer();
  let status = 'completed';
  await followEvents(`${values.url}/v1/runs/${created.id}/events`, headers, async (e) => {
    renderer.render(e);
    if (e.type === 'run.failed') status = 'failed';
    if (e.type === 'run.cancelled') status = 'cancelled';
    if (e.type === 'run.paused') await promptDecisions(values.url!, values.key, created.id!, (e.data as { pending: PendingCall[] }).pending);
  });
  return status === 'completed' ? 0 : 1;
}
