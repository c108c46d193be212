#!/usr/bin/env node
import { demoAgentScript } from './demo-agent.js';
import { startMockLlm } from './server.js';
import type { MockRequest, Script } from './types.js';

/**
 * The mock model as its own process (benchmarks, manual testing): prints `mock llm listening on URL`.
 *   node main.js demo            the demo agent (calculator twice, current_time, an answer)
 *   node main.js tool-loop N [TOOL [ARGS]]  N-1 calls of the tool `noop` (or TOOL, with the JSON ARGS), then an answer
 *   node main.js resume          calls `notify` (which pauses for approval); once a result is back, prints
 *                                `arrival <marker> <hrtime ns>` (the run's `[marker]`) and answers
 */
const [mode = 'demo', arg] = process.argv.slice(2);
/** Tool steps since the last user message: a run in a thread carries the earlier runs' steps before its input. */
const turnStep = (req: MockRequest) => {
  const last = req.messages.map((m) => m.role).lastIndexOf('user');
  return req.messages.slice(last + 1).filter((m) => m.role === 'assistant' && m.toolCalls?.length).length;
};
const n = Number(arg ?? 5);
const [loopTool = 'noop', loopArgs] = process.argv.slice(4);
const arrived = new Set<string>();
const scripts: Record<string, Script> = {
  demo: demoAgentScript(),
  'tool-loop': (req) => (turnStep(req) < n - 1 ? { toolCalls: [{ name: loopTool, args: loopArgs ? (JSON.parse(loopArgs) as Record<string, unknown>) : { i: turnStep(req) } }] } : { text: 'done' }),
  resume: (req) => {
    if (!req.messages.some((m) => m.role === 'tool')) return { toolCalls: [{ name: 'notify', args: {} }] };
    const marker = /\[(\w+)\]/.exec(req.messages.find((m) => m.role === 'user')?.content ?? '')?.[1] ?? '';
    if (!arrived.has(marker)) {
      arrived.add(marker);
      console.log(`arrival ${marker} ${req.receivedAt}`);
    }
    return { text: 'ok' };
  },
};
const script = scripts[mode];
if (!script) {
  console.error(`unknown mode ${mode} (${Object.keys(scripts).join(', ')})`);
  process.exit(2);
}
const mock = await startMockLlm({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1', script });
console.log(`mock llm listening on ${mock.url}`);
process.on('SIGTERM', () => void mock.close().then(() => process.exit(0)));
