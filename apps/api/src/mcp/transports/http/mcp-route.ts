import type { SessionSignals } from '@taskgate/db';
import { ErrorCode, errorResponse, type JsonRpcId } from '@taskgate/protocol';
import { StopSignalError } from '@taskgate/reliability';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Authenticator, Caller } from '../../../http/auth.ts';
import { isUnavailable } from '../../../http/failures.ts';
import { mcpScopeOf, type ScopeGroup } from '../../../http/oauth/scopes.ts';
import { logFailure } from '../../../http/problem.ts';
import type { McpCore } from '../../core/mcp-core.ts';
import type { ServerIdentity } from '../../core/server-info.ts';
import { ServerStopping } from '../../core/server-stopping.ts';
import type { ListenSubscription } from '../../core/subscriptions.ts';
import { type Connection, McpDispatcher, postedHints, speaksHandshake } from '../../dispatch/dispatcher.ts';
import { readMessage } from '../../dispatch/incoming.ts';
import { newRequestScope } from '../../dispatch/request-runner.ts';
import { sessionOf } from '../../dispatch/session-revision.ts';
import { type RpcFailure, rpcFailure } from '../rpc-failures.ts';
import {
  type CallScope,
  HandshakeSessions,
  type SessionStore,
  sessionConnection,
  sessionStream,
} from './handshake-sessions.ts';
import { checkMcpAccept } from './http-guards.ts';
import { type CallsInFlight, PostAnswer } from './post-answer.ts';
import { handleBatch } from './post-batch.ts';
import { honourPostedCancel, honourPostedResponse } from './posted-messages.ts';
import { registerHttpSse } from './sse-transport.ts';

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
   * Where handshake-revision sessions are kept: Postgres in a deployment (any instance serves any
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

/** The options, the route's own registry of the calls in flight, and the dispatcher. */
interface RouteOptions extends McpRouteOptions {
  readonly calls: CallsInFlight;
  readonly dispatcher: McpDispatcher;
}

/**
 * What the scope's onRequest hook learnt of a request, kept on the request itself (a decoration
 * of the scope's requests): a WeakMap per field cost an inline call about 3% of its CPU time.
 */
interface RequestState {
  /**
   * Aborted once the client closes the response before it ended. Watched from the request's
   * arrival, before any await (the body, the session's lookup in Postgres): a close during them
   * is a cancel too, or its request would run on with its id held. PostAnswer aborts it with a
   * ServerStopping when the server closes with the request running (the request's one signal).
   */
  readonly gone: AbortController;
  /** Set once authenticated (the hook's refusals end the request before anything reads them). */
  caller: Caller | null;
}

const REQUEST_STATE = Symbol('taskgate.mcpRequest');

function stateOf(request: FastifyRequest): RequestState {
  const state = (request as unknown as Record<symbol, RequestState | null>)[REQUEST_STATE];
  if (!state) throw new Error(`${request.method} ${request.url} is served outside the MCP scope`);
  return state;
}

function watchClose(request: FastifyRequest, reply: FastifyReply): RequestState {
  const gone = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableEnded)
      gone.abort(new StopSignalError('stream_close', 'the client closed the response stream'));
  };
  if (reply.raw.destroyed) onClose();
  else reply.raw.once('close', onClose);
  const state: RequestState = { gone, caller: null };
  (request as unknown as Record<symbol, RequestState>)[REQUEST_STATE] = state;
  return state;
}

/** The tenant the scope's onRequest hook authenticated the request as. */
function tenantOf(request: FastifyRequest): string {
  const caller = stateOf(request).caller;
  if (caller === null) throw new Error(`${request.method} ${request.url} was not authenticated`);
  return caller.tenant;
}

/** The request's closed-before-answer abort (its onRequest hook made it). */
function goneOf(request: FastifyRequest): AbortController {
  return stateOf(request).gone;
}

/**
 * POST /mcp, Streamable HTTP of revision 2026-07-28: one JSON-RPC message per POST, each request
 * answered on its own response. Every tools/call is a `request`-mode task; closing the response
 * before the answer is the cancellation signal (basic/transports/streamable-http "Cancellation"):
 * the task is cancelled and nothing more is written for that request.
 */
export function registerMcpRoute(
  app: FastifyInstance,
  options: McpRouteOptions,
): { readonly completeElicitation: (tenantId: string, elicitationId: string) => Promise<number> } {
  const sessions = new HandshakeSessions({
    ...(options.sessions ? { store: options.sessions } : {}),
    ...(options.signals ? { signals: options.signals } : {}),
    // A session's subscribed resources are watched where its GET stream is, whichever instance
    // took the resources/subscribe (the URIs are kept with the session).
    watches: (tenantId, push) => options.core.resourceSubscriptions(tenantId, push),
  });
  // Open subscriptions/listen streams: ended gracefully (their result, then the stream closes)
  // before the server closes, or close() would wait for them forever.
  const listens = new Set<ListenSubscription>();
  const calls: CallsInFlight = new Set();
  const route: RouteOptions = { ...options, calls, dispatcher: new McpDispatcher(options.core, options.server) };
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
    scope.decorateRequest(REQUEST_STATE, null);
    // Callback hooks here: an async one costs every request a promise and a turn more.
    scope.addHook('onRequest', (request, reply, done) => {
      const state = watchClose(request, reply);
      // Streamable HTTP's Accept rule; the HTTP+SSE transport's POSTs predate it.
      const refused = request.routeOptions.url === '/mcp' ? checkMcpAccept(request) : null;
      if (refused) {
        reply.code(refused.status).type('application/json').send(errorResponse(null, refused.error));
        return;
      }
      // A refusal (401, 403, 400 for a token in the URL, 503 when the issuer is down) goes to the
      // error handler, which answers JSON-RPC with the refusal's WWW-Authenticate.
      options.auth.authenticate(request).then((caller) => {
        state.caller = caller;
        done();
      }, done);
    });
    // The scope a message needs is known once its body is read: `tasks/*` needs the tasks scope,
    // everything else (responses too) the tools scope; a batch needs all of its messages' scopes.
    scope.addHook('preHandler', (request, _reply, done) => {
      const caller = stateOf(request).caller;
      try {
        if (caller) options.auth.authorize(request, caller, scopeGroupsOf(request.body));
      } catch (error) {
        done(error as Error);
        return;
      }
      done();
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
          const closed = await sessions.close(sessionId, tenantOf(request));
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
      handle(request, reply, route, sessions, listens),
    );
    sseConnections = registerHttpSse(scope, {
      core: options.core,
      server: options.server,
      tenantOf,
      keepaliveMs: options.keepaliveMs ?? 15_000,
      shutdownGraceMs: options.shutdownGraceMs ?? 3_000,
    });
  });
  // The REST route that says a URL elicitation is done reaches the sessions through this.
  return { completeElicitation: (tenantId, elicitationId) => sessions.completeElicitation(tenantId, elicitationId) };
}

async function handle(
  request: FastifyRequest,
  reply: FastifyReply,
  options: RouteOptions,
  sessions: HandshakeSessions,
  listens: Set<ListenSubscription>,
) {
  if (Array.isArray(request.body)) {
    return handleBatch(
      request,
      reply,
      request.body,
      {
        tenantId: tenantOf(request),
        sessionId: single(request.headers['mcp-session-id']),
        versionHeader: single(request.headers['mcp-protocol-version']),
      },
      {
        core: options.core,
        dispatcher: options.dispatcher,
        calls: options.calls,
        keepaliveMs: options.keepaliveMs ?? 15_000,
        sseAfterMs: options.sseAfterMs ?? DEFAULT_SSE_AFTER_MS,
        signals: options.signals,
        gone: goneOf(request).signal,
        failure: (error) => logged(request, error),
      },
      sessions,
    );
  }
  const message = readMessage(request.body);
  // Not JSON-RPC, or a value that cannot be taken in (a notification's error has no id to answer).
  if (message.kind === 'invalid' || message.kind === 'unstorable') {
    return reply.code(400).send(errorResponse(message.id, message.error));
  }
  if (message.kind === 'response') {
    // A handshake client's answer to a request this server sent it (elicitation/create, ...): 202,
    // matched in its session's scope. Only the instance holding the call has the request.
    const sessionHeader = single(request.headers['mcp-session-id']);
    const scope = sessionHeader === undefined ? null : await sessions.scopeOf(sessionHeader, tenantOf(request));
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
      tenantId: tenantOf(request),
      sessionId: sessionHeader,
      signals: options.signals,
      debug: (fields, text) => request.log.debug(fields, text),
    });
    return reply.code(202).send();
  }
  const tenantId = tenantOf(request);
  const sessionId = single(request.headers['mcp-session-id']);
  const versionHeader = single(request.headers['mcp-protocol-version']);
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
  const hints = postedHints(sessionId, versionHeader);
  const log = (fields: Record<string, unknown>, text: string) => request.log.warn(fields, text);
  let connection: Connection;
  if (!speaksHandshake(method, params, hints)) {
    // 2026-07-28: the request is a connection of its own, checked against its headers.
    connection = {
      tenantId,
      scope: newRequestScope(),
      hints,
      handshake: null,
      // Each header's values apart too: Node joins a repeated header with ", " in request.headers,
      // and a repeated Mcp-Param-* must be refused, not read as one value.
      http: { headers: request.headers, distinct: () => request.raw.headersDistinct },
      log,
    };
  } else if (method === 'initialize') {
    // initialize opens a session rather than speaking in one: the headers of an earlier session
    // (a client connecting again) are not its own. The session is stored, and named in the
    // response's header, before the answer goes.
    connection = {
      tenantId,
      scope: newRequestScope(),
      hints,
      handshake: null,
      open: async (opened) => {
        const session = await sessions.open(tenantId, opened.revision, opened.clientCapabilities);
        // On the raw response: the reply is hijacked, and its answer is written there.
        reply.raw.setHeader('mcp-session-id', session);
      },
      log,
    };
  } else {
    // A stored session is looked up in Postgres: a failure there (an outage: 503, retry) answers
    // this request's id, as any later failure would, not the route's id-less error handler.
    let resolved: Awaited<ReturnType<typeof sessionOf<CallScope>>>;
    try {
      resolved = await sessionOf({ tenantId, sessionId, versionHeader }, sessions);
    } catch (error) {
      return sendFailure(request, reply, id, error);
    }
    if ('refused' in resolved) return reply.code(resolved.status).send(errorResponse(id, resolved.refused));
    connection = sessionConnection(sessions, { tenantId, sessionId, hints, ...resolved }, log);
  }
  options.dispatcher.request(
    id,
    method,
    params,
    connection,
    new PostAnswer(reply, id, params, {
      keepaliveMs: options.keepaliveMs ?? 15_000,
      sseAfterMs: options.sseAfterMs ?? DEFAULT_SSE_AFTER_MS,
      calls: options.calls,
      listens,
      gone: goneOf(request),
      failure: (error) => logged(request, error),
    }),
  );
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
  sessions: HandshakeSessions,
  keepaliveMs: number,
) {
  const tenantId = tenantOf(request);
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
  const stream = sessionStream(reply.raw, keepaliveMs);
  stream.open();
  // Deleted between the check and now (another instance): the stream closes at once.
  const resumeFrom = single(request.headers['last-event-id']);
  if (!(await sessions.attachStream(sessionId, tenantId, stream, resumeFrom))) stream.close();
}

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
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

function scopeGroupsOf(body: unknown): readonly ScopeGroup[] {
  // One message, the usual POST: one of two arrays made once.
  if (!Array.isArray(body)) return scopeGroupOf(body) === 'tasks' ? TASKS_GROUP : TOOLS_GROUP;
  return [...new Set(body.map(scopeGroupOf))];
}

const TASKS_GROUP: readonly ScopeGroup[] = ['tasks'];
const TOOLS_GROUP: readonly ScopeGroup[] = ['tools'];

function scopeGroupOf(message: unknown): ScopeGroup {
  const method = message !== null && typeof message === 'object' ? (message as { method?: unknown }).method : undefined;
  return typeof method === 'string' ? mcpScopeOf(method) : 'tools';
}
