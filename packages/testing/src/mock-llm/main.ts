#!/usr/bin/env node
import { demoAgentScript, stepOf } from './demo-agent.js';
import { startMockLlm } from './server.js';
import type { Script } from './types.js';

/**
 * The mock model as its own process (benchmarks, manual testing): prints `mock llm listening on URL`.
 *   node main.js demo            the demo agent (calculator twice, current_time, an answer)
 *   node main.js tool-loop N     N-1 calls of the tool `noop`, then an answer
 */
const [mode = 'demo', arg] = process.argv.slice(2);
const n = Number(arg ?? 5);
const scripts: Record<string, Script> = {
  demo: demoAgentScript(),
  'tool-loop': (req) => (stepOf(req) < n - 1 ? { toolCalls: [{ name: 'noop', args: { i: stepOf(req) } }] } : { text: 'done' }),
};
const script = scripts[mode];
if (!script) {
  console.error(`unknown mode ${mode} (${Object.keys(scripts).join(', ')})`);
  process.exit(2);
}
const mock = await startMockLlm({ port: Number(process.env.PORT ?? 0), host: process.env.HOST ?? '127.0.0.1', script });
console.log(`mock llm listening on ${mock.url}`);
process.on('SIGTERM', () => void mock.close().then(() => process.exit(0)));
