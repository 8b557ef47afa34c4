import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

let nextId = 1;

/**
 * One 2026-07-28 request to POST /mcp through Fastify's inject: the mirrored MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name headers (the tool's name, or the taskId of tasks/*) and the per-request
 * `_meta`, declaring `capabilities`. `headers` are added last, so a test can override one.
 */
export function injectMcp(
  app: FastifyInstance,
  method: string,
  params: Record<string, unknown>,
  options: { capabilities?: object; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  const name = method === 'tools/call' ? params.name : params.taskId;
  return app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...options.headers,
    },
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': options.capabilities ?? {},
        },
      },
    }),
  });
}
