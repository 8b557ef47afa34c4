import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';

let nextId = 1;

/** The per-request `_meta` of 2026-07-28, declaring `capabilities`. */
export function modernMeta(capabilities: object = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
}

export interface ModernRequestOptions {
  readonly capabilities?: object;
  /** Added last, so a test can override one. */
  readonly headers?: Record<string, string>;
  /** The JSON-RPC id (default: the next of a counter). */
  readonly id?: number | string;
  /** More `_meta` fields (a progressToken, a log level), after the revision's own. */
  readonly meta?: Record<string, unknown>;
}

/**
 * The headers and body of one 2026-07-28 request to POST /mcp: the mirrored MCP-Protocol-Version,
 * Mcp-Method and Mcp-Name headers (the tool's or prompt's name, the URI read, or the taskId of tasks/*) and the per-request
 * `_meta`, declaring `capabilities`.
 */
export function perRequestMessage(
  method: string,
  params: Record<string, unknown>,
  options: ModernRequestOptions = {},
): { headers: Record<string, string>; body: string } {
  const name =
    method === 'tools/call' || method === 'prompts/get'
      ? params.name
      : method === 'resources/read'
        ? params.uri
        : params.taskId;
  return {
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...options.headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: options.id ?? nextId++,
      method,
      params: { ...params, _meta: { ...modernMeta(options.capabilities), ...options.meta } },
    }),
  };
}

/** perRequestMessage through Fastify's inject. */
export function injectMcp(
  app: FastifyInstance,
  method: string,
  params: Record<string, unknown>,
  options: ModernRequestOptions = {},
): Promise<LightMyRequestResponse> {
  const { headers, body } = perRequestMessage(method, params, options);
  return app.inject({ method: 'POST', url: '/mcp', headers, payload: body });
}

/**
 * The JSON-RPC answer of a POST to /mcp, whether it came as JSON or as SSE: a request that
 * outlasts TASKGATE_MCP_SSE_AFTER_MS (a loaded machine, the first call after a restart) is answered
 * on a stream, whose last message is the answer.
 */
export function answerOf(contentType: string | undefined, text: string): unknown {
  if (!contentType?.startsWith('text/event-stream')) return JSON.parse(text);
  const data = text
    .split('\n')
    .filter((line) => line.startsWith('data:'))
    .at(-1);
  if (data === undefined) throw new Error(`an SSE answer with no message: ${JSON.stringify(text)}`);
  return JSON.parse(data.slice('data:'.length));
}

/**
 * An SSE response read as it comes: `quiet` resolves once the stream opened with a keepalive
 * comment (it switched to SSE while nothing was ready to send), `text` with everything once it ends.
 */
export function readSse(response: IncomingMessage): { quiet: Promise<void>; text: Promise<string> } {
  let text = '';
  let sawComment!: () => void;
  const quiet = new Promise<void>((resolve) => {
    sawComment = resolve;
  });
  response.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    if (text.startsWith(':')) sawComment();
  });
  return { quiet, text: new Promise<string>((resolve) => response.on('end', () => resolve(text))) };
}
