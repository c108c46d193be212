// An MCP server on the official SDK that takes its time to start (AGENTLOOP_TEST_SLOW_START_MS, as a server that
// loads a model or warms a cache would) before it reads its stdin; then it serves one tool. With
// AGENTLOOP_TEST_OUTLIVE_STDIN=1 it has background work that keeps it running after its stdin closes (as a server
// with a timer or an open pool does): its client going away does not end it.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

await new Promise((r) => setTimeout(r, Number(process.env.AGENTLOOP_TEST_SLOW_START_MS ?? 2000)));
const server = new McpServer({ name: 'slow', version: '1.0.0' });
server.registerTool(
  'echo',
  { description: 'echoes', inputSchema: { message: z.string() }, annotations: { readOnlyHint: true } },
  async ({ message }) => ({ content: [{ type: 'text', text: `slow echo: ${message}` }] }),
);
await server.connect(new StdioServerTransport());
if (process.env.AGENTLOOP_TEST_OUTLIVE_STDIN === '1') globalThis.setInterval(() => undefined, 60_000);
