import type { TaskRecord } from '@taskgate/db';
import { isTaskgateError } from '@taskgate/errors';
import {
  checkRequestMetadata,
  classifyMessage,
  ErrorCode,
  eraOf,
  errorResponse,
  type JsonRpcError,
  type JsonRpcId,
  resultResponse,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@taskgate/protocol';
import { RequestCoordinator } from '@taskgate/reliability';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TenantResolver } from '../http/auth.ts';
import { checkHttpRequest, type HttpGuardOptions } from './http-guards.ts';
import type { McpCore } from './mcp-core.ts';
import type { MethodOutcome } from './mcp-methods.ts';
import { ProgressStream } from './progress-stream.ts';

export interface McpRouteOptions extends HttpGuardOptions {
  readonly core: McpCore;
  readonly tenant: TenantResolver;
  /** `:` comments on a quiet SSE response (default 15 s). */
  readonly keepaliveMs?: number;
}

const tenants = new WeakMap<FastifyRequest, string>();

/**
 * POST /mcp, Streamable HTTP of revision 2026-07-28: one JSON-RPC message per POST, each request
 * answered on its own response. Every tools/call is a `request`-mode task; closing the response
 * before the answer is the cancellation signal (basic/transports/streamable-http "Cancellation"):
 * the task is cancelled and nothing more is written for that request.
 */
export function registerMcpRoute(app: FastifyInstance, options: McpRouteOptions): void {
  void app.register(async (scope) => {
    // Errors on this endpoint are JSON-RPC errors, not problem+json (malformed JSON is -32700).
    scope.setErrorHandler((error: FastifyError, request, reply) => {
      const { status, rpc } = transportError(error);
      if (status >= 500) request.log.error({ err: error }, 'MCP request failed');
      return reply.code(status).type('application/json').send(errorResponse(null, rpc));
    });
    scope.addHook('onRequest', async (request, reply) => {
      const refused = checkHttpRequest(request, options);
      if (refused) {
        return reply
          .code(refused.status)
          .headers(refused.headers ?? {})
          .type('application/json')
          .send(errorResponse(null, refused.error));
      }
      try {
        tenants.set(request, options.tenant(request));
      } catch (error) {
        if (!isTaskgateError(error, 'TG_UNAUTHORIZED')) throw error;
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer realm="taskgate"')
          .type('application/json')
          .send(errorResponse(null, { code: ErrorCode.InvalidRequest, message: error.message }));
      }
    });
    // 2026-07-28 has no GET stream and no sessions to DELETE ("Backward Compatibility").
    scope.route({
      method: ['GET', 'DELETE'],
      url: '/mcp',
      // MCP is described by its specification, not by the REST API's OpenAPI document.
      schema: { hide: true },
      handler: async (_request, reply) =>
        reply
          .code(405)
          .header('allow', 'POST')
          .type('application/json')
          .send(errorResponse(null, { code: ErrorCode.InvalidRequest, message: 'the MCP endpoint accepts POST only' })),
    });
    scope.post('/mcp', { schema: { hide: true } }, async (request, reply) => handle(request, reply, options));
  });
}

async function handle(request: FastifyRequest, reply: FastifyReply, options: McpRouteOptions) {
  const message = classifyMessage(request.body);
  if (message.kind === 'invalid') return reply.code(400).send(errorResponse(message.id, message.error));
  if (message.kind === 'response') {
    return reply.code(400).send(
      errorResponse(message.id, {
        code: ErrorCode.InvalidRequest,
        message: 'clients send requests and notifications only',
      }),
    );
  }
  // Notifications need no answer. 2026-07-28 defines none for clients on HTTP (a closed stream is
  // the cancel), so they are accepted and have no effect.
  if (message.kind === 'notification') return reply.code(202).send();

  const { id, method, params } = message;
  const versionHeader =
    typeof request.headers['mcp-protocol-version'] === 'string' ? request.headers['mcp-protocol-version'] : undefined;
  if (eraOf(method, params, versionHeader) === 'legacy') {
    const requested =
      versionHeader ?? (typeof params?.protocolVersion === 'string' ? params.protocolVersion : 'unknown');
    return reply.code(400).send(
      errorResponse(id, {
        code: ErrorCode.UnsupportedProtocolVersion,
        message: `Unsupported protocol version: ${requested}`,
        data: { supported: [...SUPPORTED_PROTOCOL_VERSIONS], requested },
      }),
    );
  }
  const metadata = checkRequestMetadata(request.headers, method, params);
  if (!metadata.ok) return reply.code(metadata.httpStatus).send(errorResponse(id, metadata.error));

  const tenantId = tenants.get(request) as string;
  if (method !== 'tools/call') {
    const outcome = await options.core.request(method, params, { tenantId, signal: new AbortController().signal });
    return send(reply, id, outcome as MethodOutcome);
  }
  return callTool(request, reply, id, params, tenantId, options);
}

/**
 * A tools/call, answered by hand on the raw response: as JSON, or as SSE when the call carries a
 * progress token. A closed response before the answer is the cancel: the coordinator records it,
 * the core cancels the task, and nothing is written for the request afterwards.
 */
async function callTool(
  request: FastifyRequest,
  reply: FastifyReply,
  id: JsonRpcId,
  params: Readonly<Record<string, unknown>> | undefined,
  tenantId: string,
  options: McpRouteOptions,
) {
  reply.hijack();
  const requests = new RequestCoordinator();
  requests.begin(id, 'tools/call');
  const stop = new AbortController();
  reply.raw.on('close', () => {
    if (reply.raw.writableEnded) return;
    const decision = requests.cancel(id, 'the client closed the response stream');
    if (decision.cancelled) stop.abort(new Error(decision.reason ?? 'the client closed the response stream'));
  });
  // A progress token asks for progress: the answer becomes an SSE stream of notifications/progress
  // followed by the response (basic/patterns/progress).
  const progressToken = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
  let progress: ProgressStream | null = null;
  let outcome: MethodOutcome | null;
  try {
    outcome = await options.core.request('tools/call', params, {
      tenantId,
      signal: stop.signal,
      onTaskChange: (task: TaskRecord) => {
        if (typeof progressToken !== 'string' && typeof progressToken !== 'number') return;
        progress ??= new ProgressStream(reply.raw, progressToken, options.keepaliveMs ?? 15_000);
        progress.offer(task);
      },
      log: (fields: Record<string, unknown>, message: string) => request.log.warn(fields, message),
    });
  } catch (error) {
    request.log.error({ err: error }, 'an MCP call failed');
    outcome = { kind: 'error', httpStatus: 500, error: { code: ErrorCode.InternalError, message: 'internal error' } };
  }
  // One terminal state: if the cancel won, the result is dropped and nothing is written.
  if (outcome === null || requests.complete(id) === 'drop') return;
  if (progress) return (progress as ProgressStream).finish(id, outcome);
  const body = JSON.stringify(
    outcome.kind === 'result' ? resultResponse(id, outcome.result) : errorResponse(id, outcome.error),
  );
  reply.raw.writeHead(outcome.kind === 'result' ? 200 : outcome.httpStatus, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
  });
  reply.raw.end(body);
}

function send(reply: FastifyReply, id: JsonRpcId, outcome: MethodOutcome) {
  if (outcome.kind === 'result') return reply.send(resultResponse(id, outcome.result));
  return reply.code(outcome.httpStatus).send(errorResponse(id, outcome.error));
}

function transportError(error: FastifyError): { status: number; rpc: JsonRpcError } {
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { status: 400, rpc: { code: ErrorCode.ParseError, message: `Parse error: ${error.message}` } };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return {
        status: 413,
        rpc: { code: ErrorCode.InvalidRequest, message: 'the message is larger than the 1 MiB accepted' },
      };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { status: 415, rpc: { code: ErrorCode.InvalidRequest, message: 'send the message as application/json' } };
  }
  if (error instanceof SyntaxError) {
    return { status: 400, rpc: { code: ErrorCode.ParseError, message: `Parse error: ${error.message}` } };
  }
  return { status: 500, rpc: { code: ErrorCode.InternalError, message: 'internal error' } };
}
