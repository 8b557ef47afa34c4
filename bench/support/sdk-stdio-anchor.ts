// The official SDK v1 server over stdio, with one tool: the anchor for how soon a stdio MCP
// server launched by a client answers its first message (bench/stdio-first-answer.ts).
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const mcp = new McpServer({ name: 'anchor', version: '1.0.0' });
mcp.registerTool('greet', { inputSchema: { name: z.string() } }, async ({ name }) => ({
  content: [{ type: 'text', text: `Hello, ${name}!` }],
}));
await mcp.connect(new StdioServerTransport());
