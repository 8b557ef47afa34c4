import type { HttpClient, HttpOutcome } from './http-client.ts';
import { parseSse } from './sse.ts';

export const TASKS_CAPABILITIES = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
let nextId = 1;

export interface RpcMessage {
  readonly id?: unknown;
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string; data?: unknown };
}

/**
 * The headers and body of one 2026-07-28 request to POST /mcp (the shapes of
 * test/support/mcp-http.ts: mirrored MCP-Protocol-Version, Mcp-Method and Mcp-Name headers and the
 * per-request `_meta`), with the tenant's bearer token.
 */
export function mcpRequest(
  method: string,
  params: Record<string, unknown>,
  token: string,
  capabilities: object,
): { id: number; headers: Record<string, string>; body: string } {
  const id = nextId++;
  const name = method === 'tools/call' ? params.name : params.taskId;
  return {
    id,
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': capabilities,
        },
      },
    }),
  };
}

/** One MCP request over HTTP; the JSON-RPC response, whether it came as JSON or at the end of SSE. */
export async function callMcp(
  http: HttpClient,
  apiUrl: string,
  token: string,
  method: string,
  params: Record<string, unknown>,
  options: { capabilities?: object; timeoutMs: number; signal?: AbortSignal },
): Promise<{ outcome: HttpOutcome; message: RpcMessage | null }> {
  const request = mcpRequest(method, params, token, options.capabilities ?? {});
  const outcome = await http.send('POST', `${apiUrl}/mcp`, {
    headers: request.headers,
    body: request.body,
    timeoutMs: options.timeoutMs,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  return { outcome, message: outcome.kind === 'response' ? responseOf(outcome, request.id) : null };
}

function responseOf(outcome: Extract<HttpOutcome, { kind: 'response' }>, id: number): RpcMessage | null {
  const type = outcome.headers.get('content-type') ?? '';
  const candidates = type.includes('text/event-stream')
    ? parseSse(outcome.text).map((event) => safeJson(event.data))
    : [safeJson(outcome.text)];
  return (
    (candidates.find(
      (message) =>
        message !== null && (message.id === id || message.id === null) && ('result' in message || 'error' in message),
    ) as RpcMessage | undefined) ?? null
  );
}

function safeJson(text: string): (RpcMessage & Record<string, unknown>) | null {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null ? (value as RpcMessage & Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
