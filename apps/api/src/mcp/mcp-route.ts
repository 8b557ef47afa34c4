import type { SessionSignals } from '@taskgate/db';
import {
  type Capabilities,
  checkJsonValue,
  checkRequestMetadata,
  classifyMessage,
  ErrorCode,
  errorResponse,
  invalidJsonValueError,
  type JsonRpcId,
  LEGACY_PROTOCOL_VERSIONS,
  type LogLevel,
  type ProtocolEra,
  type RequestHeaders,
  requestEra,
  resultResponse,
} from '@taskgate/protocol';
import { RequestCoordinator, StopSignalError } from '@taskgate/reliability';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../http/auth.ts';
import { isUnavailable } from '../http/failures.ts';
import { mcpScopeOf, type ScopeGroup } from '../http/oauth/scopes.ts';
import { logFailure } from '../http/problem.ts';
import { SseStream } from '../sse/sse-stream.ts';
import { progressTokenOf } from './dispatch/progress.ts';
import { type RequestEnd, runRequest } from './dispatch/request-runner.ts';
import { handleBatch } from './http-batch.ts';
import { checkMcpAccept } from './http-guards.ts';
import { registerHttpSse } from './http-sse.ts';
import {
  type CallScope,
  LegacySessions,
  type SessionStore,
  sessionOf,
  sessionRequestContext,
} from './legacy-sessions.ts';
import { type McpCore, ServerStopping, stoppedCallError } from './mcp-core.ts';
import { type MethodOutcome, resultJson, type ServerIdentity, sharedResponse } from './mcp-methods.ts';
import { honourPostedCancel, honourPostedResponse } from './posted-messages.ts';
import { ProgressStream } from './progress-stream.ts';
import type { Initialized } from './revisions/handshake/initialize.ts';
import { type RpcFailure, rpcFailure } from './rpc-failures.ts';
import { type ListenSink, TaskSubscription } from './task-subscriptions.ts';

export interface McpRouteOptions {
  readonly core: McpCore;
  readonly server: ServerIdentity;
  readonly auth: Authenticator;
  /** `:` comments on a quiet SSE response (default 15 s). */
  readonly keepaliveMs?: number;
  /**
   * A tools/call still running after this long is answered as SSE (default 1 s): the status and
   * headers go out at once and keepalive comments follow, so a proxy's idle timeout does not cut a
   * long call and the client sees the call is alive. Shorter calls get a plain JSON response.
   */
  readonly sseAfterMs?: number;
  /**
   * When the server closes, calls still running get this long to finish (TASKGATE_SHUTDOWN_GRACE_MS,
   * default 3 s); then each is answered: its durable task (a client with the Tasks extension polls
   * it at another instance), or a retryable -31503 after its request-mode task is cancelled.
   */
  readonly shutdownGraceMs?: number;
  /**
   * Where handshake-era sessions are kept: Postgres in a deployment (any instance serves any
   * session); this process's memory when absent.
   */
  readonly sessions?: SessionStore;
  /**
   * How a POSTed cancel or client response reaches the instance holding its request when it
   * lands on another (Postgres NOTIFY in a deployment); absent: only this process is asked.
   */
  readonly signals?: SessionSignals;
}

export const DEFAULT_SSE_AFTER_MS = 1_000;

/** Calls in flight, each with the function that ends it because the server is closing. */
type CallsInFlight = Set<(reason: ServerStopping) => void>;

/** The options, and the route's own registry of the calls in flight. */
interface RouteOptions extends McpRouteOptions {
  readonly calls: CallsInFlight;
}

const tenants = new WeakMap<FastifyRequest, string>();
const callers = new WeakMap<FastifyRequest, Caller>();
/**
 * Aborts once the client closes a request's response before it ended. Registered as the request
 * arrives, before any await (the body, the session's lookup in Postgres): a close during them is
 * a cancel too, or its request would run on with its id held.
 */
const closedBeforeAnswer = new WeakMap<FastifyRequest, AbortSignal>();

function watchClose(request: FastifyRequest, reply: FastifyReply): void {
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableEnded)
      gone.abort(new StopSignalError('stream_close', 'the client closed the response stream'));
  };
  if (reply.raw.destroyed) onClose();
  else reply.raw.once('close', onClose);
  closedBeforeAnswer.set(request, gone.signal);
}

/** closedBeforeAnswer's signal for a request of this scope (its onRequest hook set it). */
function goneOf(request: FastifyRequest): AbortSignal {
  return closedBeforeAnswer.get(request) ?? new AbortController().signal;
}

/**
 * POST /mcp, Streamable HTTP of revision 2026-07-28: one JSON-RPC message per POST, each request
 * answered on its own response. Every tools/call is a `request`-mode task; closing the response
 * before the answer is the cancellation signal (basic/transports/streamable-http "Cancellation"):
 * the task is cancelled and nothing more is written for that request.
 */
export function registerMcpRoute(app: FastifyInstance, options: McpRouteOptions): void {
  const sessions = new LegacySessions(options.sessions ? { store: options.sessions } : {});
  // Open subscriptions/listen streams: ended gracefully (their result, then the stream closes)
  // before the server closes, or close() would wait for them forever.
  const listens = new Set<TaskSubscription>();
  const calls: CallsInFlight = new Set();
  // A handshake client hears of list changes on its session's GET stream, if it opened one.
  const unsubscribeTools = options.core.onListChanged((kind) =>
    sessions.notifyStreams({ jsonrpc: '2.0', method: `notifications/${kind}/list_changed` }, kind),
  );
  // A cancel or response for a session's request that another instance took: acted on if it is here.
  const unsubscribeSignals = options.signals?.onSignal((signal) => sessions.onSignal(signal));
  // Sessions abandoned here (no DELETE) are let go within a fraction of their idle window.
  const sweeping = setInterval(() => sessions.sweep(), Math.max(1_000, Math.min(60_000, sessions.idleMs / 4)));
  sweeping.unref();
  // The HTTP+SSE transport's connections (2024-11-05's clients), registered with the scope below.
  let sseConnections: { close(): Promise<void> } | null = null;
  app.addHook('preClose', async () => {
    // Not awaited either: its connections get the calls' grace period, then their answers.
    void sseConnections?.close();
    unsubscribeTools();
    unsubscribeSignals?.();
    clearInterval(sweeping);
    sessions.closeStreams();
    for (const listen of listens) listen.endGracefully();
    // Not awaited: close() goes on (no new connections) while the calls get their grace period.
    // A call that ends sooner leaves the set; those still there then get an answer, not a cut.
    if (calls.size > 0) {
      setTimeout(() => {
        for (const endCall of calls) endCall(new ServerStopping());
      }, options.shutdownGraceMs ?? 3_000).unref();
    }
  });
  void app.register(async (scope) => {
    // Errors on this endpoint are JSON-RPC errors, not problem+json (malformed JSON is -32700),
    // from the same classification as REST's, with the TG code in `data`.
    scope.setErrorHandler((error: FastifyError, request, reply) => sendFailure(request, reply, null, error));
    // Host and Origin are checked for every route, /mcp included, by the server's request guard.
    scope.addHook('onRequest', async (request, reply) => {
      watchClose(request, reply);
      // Streamable HTTP's Accept rule; the HTTP+SSE transport's POSTs predate it.
      const refused = request.routeOptions.url === '/mcp' ? checkMcpAccept(request) : null;
      if (refused) return reply.code(refused.status).type('application/json').send(errorResponse(null, refused.error));
      // A refusal (401, 403, 400 for a token in the URL, 503 when the issuer is down) goes to the
      // error handler, which answers JSON-RPC with the refusal's WWW-Authenticate.
      const caller = await options.auth.authenticate(request);
      tenants.set(request, caller.tenant);
      callers.set(request, caller);
    });
    // The scope a message needs is known once its body is read: `tasks/*` needs the tasks scope,
    // everything else (responses too) the tools scope; a batch needs all of its messages' scopes.
    scope.addHook('preHandler', async (request) => {
      const caller = callers.get(request);
      if (caller) options.auth.authorize(request, caller, scopeGroupsOf(request.body));
    });
    // 2026-07-28 has no GET stream and no sessions ("Backward Compatibility"); a 2025-11-25 client
    // may DELETE the session it was given, and may GET its session's stream, which carries
    // notifications/*/list_changed (the messages this server sends unrelated to a request).
    // GET without a session gets 405, as do other methods: a JSON-RPC 405, not problem+json's 404.
    scope.route({
      method: ['GET', 'DELETE', 'PUT', 'PATCH', 'OPTIONS'],
      url: '/mcp',
      // MCP is described by its specification, not by the REST API's OpenAPI document.
      schema: { hide: true },
      handler: async (request, reply) => {
        const sessionId = single(request.headers['mcp-session-id']);
        if (request.method === 'DELETE' && sessionId !== undefined) {
          const closed = await sessions.close(sessionId, tenants.get(request) as string);
          return reply.code(closed ? 204 : 404).send();
        }
        if (request.method === 'GET' && sessionId !== undefined) {
          return openSessionStream(request, reply, sessionId, sessions, options.keepaliveMs ?? 15_000);
        }
        return reply
          .code(405)
          .header('allow', 'POST')
          .type('application/json')
          .send(errorResponse(null, { code: ErrorCode.InvalidRequest, message: 'the MCP endpoint accepts POST only' }));
      },
    });
    scope.post('/mcp', { schema: { hide: true } }, async (request, reply) =>
      handle(request, reply, { ...options, calls }, sessions, listens),
    );
    sseConnections = registerHttpSse(scope, {
      core: options.core,
      server: options.server,
      tenantOf: (request) => tenants.get(request) as string,
      keepaliveMs: options.keepaliveMs ?? 15_000,
      shutdownGraceMs: options.shutdownGraceMs ?? 3_000,
    });
  });
}

async function handle(
  request: FastifyRequest,
  reply: FastifyReply,
  options: RouteOptions,
  sessions: LegacySessions,
  listens: Set<TaskSubscription>,
) {
  if (Array.isArray(request.body)) {
    return handleBatch(
      request,
      reply,
      request.body,
      {
        tenantId: tenants.get(request) as string,
        sessionId: single(request.headers['mcp-session-id']),
        versionHeader: single(request.headers['mcp-protocol-version']),
      },
      {
        core: options.core,
        calls: options.calls,
        keepaliveMs: options.keepaliveMs ?? 15_000,
        sseAfterMs: options.sseAfterMs ?? DEFAULT_SSE_AFTER_MS,
        signals: options.signals,
        gone: goneOf(request),
        failure: (error) => logged(request, error),
      },
      sessions,
    );
  }
  const message = classifyMessage(request.body);
  if (message.kind === 'invalid') return reply.code(400).send(errorResponse(message.id, message.error));
  if (message.kind === 'response') {
    // A handshake client's answer to a request this server sent it (elicitation/create, ...): 202,
    // matched in its session's scope. Only the instance holding the call has the request.
    const sessionHeader = single(request.headers['mcp-session-id']);
    const scope =
      sessionHeader === undefined ? null : await sessions.scopeOf(sessionHeader, tenants.get(request) as string);
    if (!scope) {
      return reply.code(sessionHeader === undefined ? 400 : 404).send(
        errorResponse(message.id, {
          code: ErrorCode.InvalidRequest,
          message:
            sessionHeader === undefined
              ? 'a response answers a request of this server, which only a session receives'
              : 'unknown session; send initialize again',
        }),
      );
    }
    honourPostedResponse(scope, request.body as Record<string, unknown>, {
      tenantId: tenants.get(request) as string,
      sessionId: sessionHeader,
      signals: options.signals,
      debug: (fields, text) => request.log.debug(fields, text),
    });
    return reply.code(202).send();
  }
  // The one decoded-input check REST and stdio run too: a value Postgres cannot store (NUL, an
  // unpaired surrogate), a non-finite number or nesting past MAX_JSON_DEPTH is -32602 before any
  // method sees it. A notification has no id to answer, so it gets the error without one.
  const unstorable = checkJsonValue(request.body);
  if (unstorable) {
    return reply
      .code(400)
      .send(errorResponse(message.kind === 'request' ? message.id : null, invalidJsonValueError(unstorable)));
  }
  const tenantId = tenants.get(request) as string;
  const sessionId = single(request.headers['mcp-session-id']);
  const versionHeader = single(request.headers['mcp-protocol-version']);
  const legacyHeaders =
    sessionId !== undefined || (versionHeader !== undefined && LEGACY_PROTOCOL_VERSIONS.includes(versionHeader));
  if (message.kind === 'notification') {
    // 2026-07-28 defines no client notifications on HTTP (a closed stream is the cancel), but the
    // clients deployed today (2025-11-25) POST notifications/cancelled, and it is honoured in
    // their session (without one, nothing says which client's request id it names).
    if (sessionId !== undefined && message.method === 'notifications/cancelled') {
      // With the store unreachable, the request may still run here: the cancel reaches it (and
      // its task's cancel is retried until the database is back). Clients do not resend a cancel.
      const scope = await sessions.scopeOf(sessionId, tenantId).catch((error: unknown) => {
        if (!isUnavailable(error)) throw error;
        return sessions.heldScope(sessionId, tenantId);
      });
      if (scope) {
        honourPostedCancel(scope, message.params, {
          tenantId,
          sessionId,
          signals: options.signals,
          debug: (fields, text) => request.log.debug(fields, text),
        });
      }
    }
    return reply.code(202).send();
  }

  const { id, method, params } = message;
  if (requestEra(method, params, { handshake: legacyHeaders, sticky: true, versionHeader }) === 'legacy') {
    return handleLegacy(
      request,
      reply,
      { id, method, params },
      { tenantId, sessionId, versionHeader },
      options,
      sessions,
    );
  }
  const metadata = checkRequestMetadata(request.headers, method, params);
  if (!metadata.ok) return reply.code(metadata.httpStatus).send(errorResponse(id, metadata.error));

  if (method === 'subscriptions/listen') {
    return listen(reply, id, params, tenantId, metadata.metadata.clientCapabilities, options, listens);
  }
  if (method !== 'tools/call') {
    try {
      const outcome = await options.core.request(method, params, {
        tenantId,
        signal: new AbortController().signal,
        clientCapabilities: metadata.metadata.clientCapabilities,
      });
      return send(reply, id, outcome as MethodOutcome);
    } catch (error) {
      return sendFailure(request, reply, id, error);
    }
  }
  return callTool(
    request,
    reply,
    id,
    params,
    {
      tenantId,
      clientCapabilities: metadata.metadata.clientCapabilities,
      logLevel: metadata.metadata.logLevel ?? null,
      // Each header's values apart: Node joins a repeated header with ", " in request.headers, and
      // a repeated Mcp-Param-* must be refused, not read as one value.
      headers: () => request.raw.headersDistinct,
    },
    options,
  );
}

/**
 * The 2025-11-25 era (basic/lifecycle, basic/transports of that revision): the initialize
 * handshake opens a session; later requests carry MCP-Protocol-Version and, if given one,
 * Mcp-Session-Id (unknown → 404, so the client re-initializes). Results carry no resultType, and
 * an unknown method is a JSON-RPC error on a 200 (a 404 would tell the client its session is gone).
 */
async function handleLegacy(
  request: FastifyRequest,
  reply: FastifyReply,
  call: { id: JsonRpcId; method: string; params: Readonly<Record<string, unknown>> | undefined },
  headed: { tenantId: string; sessionId: string | undefined; versionHeader: string | undefined },
  options: RouteOptions,
  sessions: LegacySessions,
) {
  const { id, method, params } = call;
  // initialize opens a session rather than speaking in one: the headers of an earlier session
  // (a client connecting again) are not its own. The dispatcher negotiates and answers it; the
  // session is stored, and named in the response's header, through `open`.
  const opening = method === 'initialize';
  const at = opening ? { ...headed, sessionId: undefined, versionHeader: undefined } : headed;
  // A stored session is looked up in Postgres: a failure there (an outage: 503, retry) answers
  // this request's id, as any later failure would, not the route's id-less error handler.
  let resolved: Awaited<ReturnType<typeof sessionOf>>;
  try {
    resolved = await sessionOf(at, sessions);
  } catch (error) {
    return sendFailure(request, reply, id, error);
  }
  if ('refused' in resolved) return reply.code(resolved.status).send(errorResponse(id, resolved.refused));
  const { scope, revision } = resolved;
  const openSession = async (opened: Initialized) => {
    const session = await sessions.open(at.tenantId, opened.revision, opened.clientCapabilities);
    reply.header('mcp-session-id', session);
  };
  if (method === 'tools/call')
    return callTool(
      request,
      reply,
      id,
      params,
      {
        tenantId: at.tenantId,
        era: 'legacy',
        revision,
        logLevel: scope.logLevel,
        ...(scope.clientCapabilities ? { clientCapabilities: scope.clientCapabilities } : {}),
      },
      options,
      scope,
    );
  // Every other request runs through the request runner in the session's scope (or the tenant's,
  // without a session): its id begins in the scope's coordinator, so one still in flight is not
  // taken twice; a POSTed notifications/cancelled reaches it there; a closed response cancels it
  // (tasks/result may wait for hours: the wait ends, never the task); and a server that stops
  // ends it with a retryable answer after the grace period. While tasks/result waits, the task's
  // status changes go out on the same response as SSE (notifications/tasks/status, that
  // revision's only stream for them over HTTP), as do a prompt's or resource's requests to the
  // client and its log messages; the answer ends the stream.
  let stream: SseStream | null = null;
  const toSse = () => {
    if (!stream) {
      reply.hijack();
      stream = new SseStream(reply.raw, {
        capacity: 4,
        coalesce: 'by-key',
        keepaliveMs: options.keepaliveMs ?? 15_000,
      });
      stream.open();
    }
    return stream;
  };
  const onTaskStatus = (notification: Record<string, unknown>) =>
    toSse().push({ kind: 'replaceable', key: 'status', value: { data: notification } });
  const stopping = new AbortController();
  const endRequest = (reason: ServerStopping) => stopping.abort(reason);
  options.calls.add(endRequest);
  let sent = 0;
  let end: RequestEnd;
  try {
    end = await runRequest(id, method, params, {
      core: options.core,
      // Only a session's client can be asked: its answer is POSTed with the session's id.
      scope: at.sessionId === undefined ? { requests: scope.requests, controllers: scope.controllers } : scope,
      context: {
        ...sessionRequestContext(sessions, options.core, { ...at, scope, revision }, (fields, text) =>
          request.log.warn(fields, text),
        ),
        ...(method === 'tasks/result' ? { onTaskStatus } : {}),
        ...(opening ? { open: openSession } : {}),
      },
      send: (message, kind) => {
        sent += 1;
        toSse().push({ kind: 'replaceable', key: `${kind} ${sent}`, value: { data: message } });
      },
      gone: goneOf(request),
      stopping: stopping.signal,
      failure: (error) => logged(request, error),
    });
  } finally {
    options.calls.delete(endRequest);
  }
  const open = stream as SseStream | null;
  if (end.kind === 'cancelled') {
    // Cancelled by a POSTed notification while the response is open, or by its close: it ends
    // without a message (an SSE stream just ends, an unanswered POST gets an empty 204).
    if (open) return open.close();
    if (reply.raw.destroyed) return reply.hijack();
    return reply.code(204).send();
  }
  let message: Record<string, unknown>;
  let status = 200;
  if (end.kind === 'duplicate') message = errorResponse(id, end.error);
  else if (end.kind === 'stopped') {
    message = errorResponse(id, stoppedCallError(method));
    status = 503;
    reply.header('retry-after', '1');
  } else if (end.outcome.kind === 'error') {
    message = errorResponse(id, end.outcome.error);
    // A failure's own status (503 in an outage) and headers; the revision's methods answer
    // theirs on a 200.
    status = end.outcome.httpStatus;
    if (end.headers) reply.headers(end.headers);
  } else {
    if (!open) return send(reply, id, end.outcome);
    message = resultResponse(id, end.outcome.result);
  }
  if (open) return open.push({ kind: 'final', value: { data: message } });
  return reply.code(status).send(message);
}

/**
 * subscriptions/listen on HTTP: an SSE stream carrying the acknowledgement, then the notifications
 * the filter asked for, with keepalives; per task only the latest undelivered status is kept. The
 * client ends it by closing the stream (which never changes a task); the server by its result.
 */
async function listen(
  reply: FastifyReply,
  id: JsonRpcId,
  params: Readonly<Record<string, unknown>> | undefined,
  tenantId: string,
  clientCapabilities: Capabilities,
  options: McpRouteOptions,
  listens: Set<TaskSubscription>,
) {
  let stream: SseStream | null = null;
  const sink: ListenSink = {
    push: (message, key) => stream?.push({ kind: 'replaceable', key, value: { data: message } }),
    finish: (message) => stream?.push({ kind: 'final', value: { data: message } }),
  };
  const opened = options.core.listen(
    params,
    { tenantId, clientCapabilities, signal: new AbortController().signal },
    id,
    sink,
  );
  if (!(opened instanceof TaskSubscription)) {
    const refused = opened as Extract<MethodOutcome, { kind: 'error' }>;
    return reply.code(refused.httpStatus).send(errorResponse(id, refused.error));
  }
  reply.hijack();
  // One slot per watched task (a task's statuses coalesce in it), one for the tool list's changes,
  // plus the acknowledgement and the result: a stalled reader holds at most the latest status of
  // each task and one list change, and nothing is dropped.
  const taskIds = (params?.notifications as { taskIds?: unknown } | undefined)?.taskIds;
  const watched = Array.isArray(taskIds) ? taskIds.length : 0;
  stream = new SseStream(reply.raw, {
    capacity: watched + 3,
    coalesce: 'by-key',
    keepaliveMs: options.keepaliveMs ?? 15_000,
  });
  stream.open();
  listens.add(opened);
  stream.onClose(() => {
    opened.stop();
    listens.delete(opened);
  });
  try {
    await opened.start();
  } catch (error) {
    // The stream's 200 is out: a subscription that could not start ends with its error.
    sink.finish(errorResponse(id, logged(reply.request, error).error));
  }
}

/**
 * A 2025-11-25 session's GET stream (transports "Listening for Messages from the Server"): SSE
 * with keepalives, carrying notifications/tools/list_changed; never a response. An unknown session
 * is 404 (the client initializes again); an Accept without text/event-stream is 406.
 */
async function openSessionStream(
  request: FastifyRequest,
  reply: FastifyReply,
  sessionId: string,
  sessions: LegacySessions,
  keepaliveMs: number,
) {
  const tenantId = tenants.get(request) as string;
  if ((await sessions.scopeOf(sessionId, tenantId)) === null) {
    return reply
      .code(404)
      .type('application/json')
      .send(errorResponse(null, { code: ErrorCode.InvalidRequest, message: 'unknown session; send initialize again' }));
  }
  const accept = (request.headers.accept ?? '').toLowerCase();
  if (!accept.includes('text/event-stream') && !accept.includes('*/*')) {
    return reply
      .code(406)
      .type('application/json')
      .send(
        errorResponse(null, {
          code: ErrorCode.InvalidRequest,
          message: 'the Accept header must list text/event-stream',
        }),
      );
  }
  reply.hijack();
  // One slot: the only message is "the list changed", and one undelivered says it all.
  const stream = new SseStream(reply.raw, { capacity: 1, coalesce: 'by-key', keepaliveMs });
  stream.open();
  // Deleted between the check and now (another instance): the stream closes at once.
  if (!(await sessions.attachStream(sessionId, tenantId, stream))) stream.close();
}

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/**
 * A tools/call, answered by hand on the raw response: as JSON, or as SSE once progress is to be
 * sent (the call carries a progress token) or once the call outlives sseAfterMs. A closed response before the answer is the cancel: the coordinator records it,
 * the core cancels the task, and nothing is written for the request afterwards.
 */
async function callTool(
  request: FastifyRequest,
  reply: FastifyReply,
  id: JsonRpcId,
  params: Readonly<Record<string, unknown>> | undefined,
  caller: {
    readonly tenantId: string;
    readonly clientCapabilities?: Capabilities;
    readonly era?: ProtocolEra;
    readonly revision?: string;
    readonly logLevel?: LogLevel | null;
    readonly headers?: () => RequestHeaders;
  },
  options: RouteOptions,
  scope?: CallScope,
) {
  // A 2025-11-25 request may be cancelled by a later POST: its scope's coordinator decides the race.
  // A 2026-07-28 POST is a scope of its own: only its closed response cancels it.
  const callScope = scope ?? { requests: new RequestCoordinator(), controllers: new Map<string, AbortController>() };
  const begun = callScope.requests.begin(id, 'tools/call');
  if (!begun.ok) {
    return reply.send(
      errorResponse(id, {
        code: ErrorCode.InvalidRequest,
        message: `request id ${JSON.stringify(id)} is already in use`,
      }),
    );
  }
  reply.hijack();
  const stopping = new AbortController();
  const endCall = (reason: ServerStopping) => stopping.abort(reason);
  options.calls.add(endCall);
  // A progress token asks for progress: the answer becomes an SSE stream of notifications/progress
  // followed by the response (basic/patterns/progress). A call that outlives sseAfterMs becomes an
  // SSE stream too, with keepalives and, if there is no token, no progress.
  const progressToken = progressTokenOf(params);
  const keepaliveMs = options.keepaliveMs ?? 15_000;
  let progress: ProgressStream | null = null;
  const toSse = () => {
    if (!reply.raw.writableEnded && !reply.raw.destroyed)
      progress ??= new ProgressStream(reply.raw, progressToken, keepaliveMs);
    return progress;
  };
  const sseTimer = setTimeout(toSse, options.sseAfterMs ?? DEFAULT_SSE_AFTER_MS);
  let end: RequestEnd;
  try {
    end = await runRequest(id, 'tools/call', params, {
      core: options.core,
      begun: begun.generation,
      // A handshake session's inline tool asks its client on this call's stream (requests of the
      // server's own, answered by POSTed responses matched in the session's scope).
      scope: callScope,
      context: { ...caller, log: (fields, message) => request.log.warn(fields, message) },
      // Only a call that asked for progress watches it: the others read their task once, at the end.
      progress: (update) => toSse()?.offer(update),
      // A log message (or a request to the client) turns the answer into SSE, as progress does:
      // it must go before the response.
      send: (message) => toSse()?.message(message),
      gone: goneOf(request),
      stopping: stopping.signal,
      failure: (error) => logged(request, error),
    });
  } finally {
    clearTimeout(sseTimer);
    options.calls.delete(endCall);
  }
  if (end.kind === 'cancelled' || end.kind === 'duplicate') {
    // Cancelled by a POSTed notification (2025-11-25) while the response is still open: end it
    // without a message — an SSE stream just ends, an unanswered POST gets an empty 204. (One
    // terminal state: a result that lost the race to the cancel was dropped by the runner.)
    if (!reply.raw.writableEnded && !reply.raw.destroyed) {
      if (!reply.raw.headersSent) reply.raw.writeHead(204);
      reply.raw.end();
    }
    return;
  }
  let outcome: MethodOutcome;
  if (end.kind === 'stopped') {
    // Ended by the server's shutdown, its request-mode task cancelled: a definitive, retryable
    // answer rather than a cut connection (a client would wait on that until its own timeout).
    if (!reply.raw.headersSent) reply.raw.setHeader('retry-after', '1');
    outcome = { kind: 'error', httpStatus: 503, error: stoppedCallError() };
  } else {
    outcome = end.outcome;
    for (const [name, value] of Object.entries(end.headers ?? {})) {
      if (!reply.raw.headersSent) reply.raw.setHeader(name, value);
    }
  }
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
  if (outcome.kind === 'result') {
    const shared = sharedResponse(id, outcome.result);
    if (shared) return sendShared(reply, shared);
    return reply.type('application/json; charset=utf-8').send(resultJson(id, outcome.result));
  }
  return reply.code(outcome.httpStatus).send(errorResponse(id, outcome.error));
}

/**
 * A shared result (tools/list), serialised once per version, written as its byte pieces in one
 * writev. As one string, the answer would be concatenated and encoded to UTF-8 again for every
 * request (for 200 tools' 104 KB, 0.1-0.2 ms of the server's time each; see shareResult).
 */
function sendShared(reply: FastifyReply, pieces: readonly Buffer[]) {
  reply.hijack();
  const res = reply.raw;
  // Headers set on the reply so far would otherwise be lost with Fastify's send.
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) res.setHeader(name, value);
  }
  res.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': pieces.reduce((length, piece) => length + piece.length, 0),
  });
  res.cork();
  for (const piece of pieces) res.write(piece);
  res.end();
  res.uncork();
}

/** A failure as its JSON-RPC error on this response, with its status and headers (Retry-After on a 503). */
function sendFailure(request: FastifyRequest, reply: FastifyReply, id: JsonRpcId | null, error: unknown) {
  const failure = logged(request, error);
  return reply
    .code(failure.status)
    .headers(failure.headers)
    .type('application/json')
    .send(errorResponse(id, failure.error));
}

function logged(request: FastifyRequest, error: unknown): RpcFailure {
  const failure = rpcFailure(error);
  logFailure(request, failure.status, error, failure.taskgateCode);
  return failure;
}

function scopeGroupsOf(body: unknown): ScopeGroup[] {
  const messages = Array.isArray(body) ? body : [body];
  const groups = new Set<ScopeGroup>();
  for (const message of messages) {
    const method =
      message !== null && typeof message === 'object' ? (message as { method?: unknown }).method : undefined;
    groups.add(typeof method === 'string' ? mcpScopeOf(method) : 'tools');
  }
  return [...groups];
}
