// An MCP server on the official SDK whose tool list grows: `grow` adds a tool, and the SDK tells the client
// (notifications/tools/list_changed). The reference servers send that notification only right after initializing.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'growing', version: '1.0.0' });
let added = 0;
server.registerTool('grow', { description: 'adds a tool' }, async () => {
  added++;
  server.registerTool(`grown_${added}`, { description: `tool number ${added}` }, async () => ({
    content: [{ type: 'text', text: `grown ${added}` }],
  }));
  return { content: [{ type: 'text', text: `now ${added + 1} tools` }] };
});
await server.connect(new StdioServerTransport());
