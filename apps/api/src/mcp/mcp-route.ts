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
import type { ToolRegistry } from '@taskgate/tools';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { TenantResolver } from '../http/auth.ts';
import type { TaskEventsHub } from '../tasks/task-events-hub.ts';
import type { TaskService } from '../tasks/task-service.ts';
import { checkHttpRequest, type HttpGuardOptions } from './http-guards.ts';
import {
  callOutcome,
  discoverResult,
  type MethodOutcome,
  readCallParams,
  refusal,
  type ServerIdentity,
  toolsListResult,
} from './mcp-methods.ts';
import { ProgressStream } from './progress-stream.ts';
import { waitForTerminal } from './task-outcome.ts';

export interface McpRouteOptions extends HttpGuardOptions {
  readonly service: TaskService;
  readonly hub: TaskEventsHub;
  readonly tools: ToolRegistry;
  readonly tenant: TenantResolver;
  readonly server: ServerIdentity;
  /** The floor under NOTIFY while a call waits for its task. */
  readonly pollMs: number;
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

  switch (method) {
    case 'server/discover':
      return reply.send(resultResponse(id, discoverResult(options.server)));
    case 'tools/list':
      return reply.send(resultResponse(id, toolsListResult(options.tools, options.server)));
    case 'tools/call':
      return callTool(request, reply, id, params, options);
    default:
      return reply
        .code(404)
        .send(errorResponse(id, { code: ErrorCode.MethodNotFound, message: `Method not found: ${method}` }));
  }
}

async function callTool(
  request: FastifyRequest,
  reply: FastifyReply,
  id: JsonRpcId,
  params: Readonly<Record<string, unknown>> | undefined,
  options: McpRouteOptions,
) {
  const call = readCallParams(params);
  if ('code' in call) return reply.send(errorResponse(id, call));
  const tenantId = tenants.get(request) as string;
  let submission: Awaited<ReturnType<TaskService['submit']>>;
  try {
    submission = await options.service.submit(tenantId, {
      tool: call.name,
      arguments: call.arguments,
      mode: 'request',
    });
  } catch (error) {
    const outcome = refusal(error);
    if (outcome.kind === 'error' && outcome.error.code === ErrorCode.InternalError) throw error;
    return send(reply, id, outcome);
  }
  const { task } = submission;

  // From here the response is written by hand, so that after a cancel nothing at all is.
  reply.hijack();
  const requests = new RequestCoordinator();
  requests.begin(id, 'tools/call');
  const stop = new AbortController();
  reply.raw.on('close', () => {
    if (reply.raw.writableEnded) return;
    const decision = requests.cancel(id, 'the client closed the response stream');
    if (!decision.cancelled) return;
    stop.abort(new Error('cancelled by the client'));
    options.service.cancel(tenantId, task.id, decision.reason).catch((error: Error) => {
      request.log.warn({ taskId: task.id, error: error.message }, 'cancelling the task of a closed MCP request failed');
    });
  });
  // A progress token asks for progress: the answer becomes an SSE stream of notifications/progress
  // followed by the response (basic/patterns/progress).
  const progressToken = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
  const progress =
    typeof progressToken === 'string' || typeof progressToken === 'number'
      ? new ProgressStream(reply.raw, progressToken, options.keepaliveMs ?? 15_000)
      : null;

  let outcome: MethodOutcome;
  try {
    const done = await waitForTerminal(options.service, options.hub, tenantId, task.id, {
      pollMs: options.pollMs,
      signal: stop.signal,
      ...(progress ? { onChange: (current: TaskRecord) => progress.offer(current) } : {}),
    });
    outcome = callOutcome(done, options.server);
  } catch (error) {
    if (stop.signal.aborted) return; // cancelled: the request gets no response
    request.log.error({ err: error, taskId: task.id }, 'waiting for an MCP call failed');
    outcome = { kind: 'error', httpStatus: 500, error: { code: ErrorCode.InternalError, message: 'internal error' } };
  }
  // One terminal state: if the cancel won, the result is dropped.
  if (requests.complete(id) === 'drop') return;
  if (progress) return progress.finish(id, outcome);
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
