#!/usr/bin/env node
import { demoAgentScript } from './demo-agent.js';
import { startMockLlm } from './server.js';
import type { MockRequest, Script } from './types.js';

/**
 * The mock model as its own process (benchmarks, manual testing): prints `mock llm listening on URL`.
 *   node main.js demo            the demo agent (calculator twice, current_time, an answer)
 *   node main.js tool-loop N [TOOL [ARGS]]  N-1 calls of the tool `noop` (or TOOL, with the JSON ARGS), then an answer
 *   node main.js slow-loop N MIN MAX   tool-loop N (`[len=K]` in the input: K) answering after MIN–MAX ms (uniform); a run with
 *                                `[park]` calls `notify` (which pauses for approval), one with `[fast]` answers at once
 *   node main.js resume          calls `notify` (which pauses for approval); once a result is back, prints
 *                                `arrival <marker> <hrtime ns>` (the run's `[marker]`) and answers
 */
const [mode = 'demo', arg, minMs = '1000', maxMs = '3000'] = process.argv.slice(2);
/** Tool steps since the last user message: a run in a thread carries the earlier runs' steps before its input. */
const turnStep = (req: MockRequest) => {
  const last = req.messages.map((m) => m.role).lastIndexOf('user');
  return req.messages.slice(last + 1).filter((m) => m.role === 'assistant' && m.toolCalls?.length).length;
};
const n = Number(arg ?? 5);
const [loopTool = 'noop', loopArgs] = process.argv.slice(4);
const arrived = new Set<string>();
const firstUser = (req: MockRequest) => {
  const c = req.messages.find((m) => m.role === 'user')?.content ?? '';
  return typeof c === 'string' ? c : JSON.stringify(c);
};
/** N model calls (a run whose input has `[len=K]`: K), each but the last calling `tool` (with the JSON `args`). */
const toolLoop = (req: MockRequest, tool = 'noop', args?: string): ReturnType<Script> => {
  const len = Number(/\[len=(\d+)\]/.exec(firstUser(req))?.[1] ?? n);
  return turnStep(req) < len - 1
    ? { toolCalls: [{ name: tool, args: args ? (JSON.parse(args) as Record<string, unknown>) : { i: turnStep(req) } }] }
    : { text: 'done' };
};
const scripts: Record<string, Script> = {
  'slow-loop': async (req) => {
    const input = firstUser(req);
    if (input.includes('[park]'))
      return req.messages.some((m) => m.role === 'tool')
        ? { text: 'ok' }
        : { toolCalls: [{ name: 'notify', args: {} }] };
    if (!input.includes('[fast]'))
      await new Promise((r) => setTimeout(r, Number(minMs) + Math.random() * (Number(maxMs) - Number(minMs))));
    return toolLoop(req);
  },
  demo: demoAgentScript(),
  'tool-loop': (req) => toolLoop(req, loopTool, loopArgs),
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
