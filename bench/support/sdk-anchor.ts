import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

export interface SdkAnchor {
  readonly port: number;
  readonly url: string;
  close(): void;
}

/**
 * The anchor the MCP benches measure against: the official SDK v1 server in its documented
 * stateless pattern, a fresh server and transport per request, with the tools `register` adds.
 * `json` answers with a JSON body rather than an SSE stream (enableJsonResponse).
 */
export async function startSdkAnchor(
  register: (mcp: McpServer) => void,
  options: { json: boolean },
): Promise<SdkAnchor> {
  const server = http.createServer(async (req, res) => {
    const mcp = new McpServer({ name: 'anchor', version: '1.0.0' });
    register(mcp);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      ...(options.json ? { enableJsonResponse: true } : {}),
    });
    res.on('close', () => void transport.close());
    await mcp.connect(transport);
    let body = '';
    for await (const chunk of req) body += chunk;
    await transport.handleRequest(req, res, JSON.parse(body));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () => {
      server.closeAllConnections();
      server.close();
    },
  };
}
