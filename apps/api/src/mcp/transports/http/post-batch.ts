import type { SessionSignals } from '@taskgate/db';
import { classifyMessage, ErrorCode, errorResponse } from '@taskgate/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SseStream } from '../../../sse/sse-stream.ts';
import type { McpCore } from '../../core/mcp-core.ts';
import type { ServerStopping } from '../../core/server-stopping.ts';
import { resultJson } from '../../core/shared-results.ts';
import { type McpDispatcher, postedBatchRefusal, postedHints } from '../../dispatch/dispatcher.ts';
import { readMessage } from '../../dispatch/incoming.ts';
import { sessionOf } from '../../dispatch/session-revision.ts';
import type { RpcFailure } from '../rpc-failures.ts';
import { type CallScope, type HandshakeSessions, sessionConnection } from './handshake-sessions.ts';
import { honourPostedCancel, honourPostedResponse, type PostedFrom } from './posted-messages.ts';

export interface BatchRoute {
  readonly core: McpCore;
  readonly dispatcher: McpDispatcher;
  /** The route's calls in flight, each with the function that ends it because the server is closing. */
  readonly calls: Set<(reason: ServerStopping) => void>;
  readonly keepaliveMs: number;
  /** A batch still running after this long is answered as SSE (keepalives, then the answer). */
  readonly sseAfterMs: number;
  readonly signals?: SessionSignals | undefined;
  /** Aborts when the client closes the response before its answer (watched from its arrival). */
  readonly gone: AbortSignal;
  /** A failure as its JSON-RPC error, logged. */
  readonly failure: (error: unknown) => RpcFailure;
}

/**
 * A POST whose body is a JSON-RPC batch (2025-03-26 basic/index "Batching", transports "Sending
 * Messages to the Server"), in a session of a revision that has batches. Responses and
 * notifications in it are honoured as single POSTs would be; a batch of nothing else is 202. Its
 * requests run side by side in the session's scope (a POSTed cancel reaches each), and the answer
 * is one array of their responses once every one has settled: as JSON, or — once a request has a
 * notification or a request of the server's to send first, or the batch outlives sseAfterMs — as
 * an SSE stream whose last event is that array. `initialize` must not be batched (basic/lifecycle).
 */
export async function handleBatch(
  request: FastifyRequest,
  reply: FastifyReply,
  elements: readonly unknown[],
  context: { tenantId: string; sessionId: string | undefined; versionHeader: string | undefined },
  route: BatchRoute,
  sessions: HandshakeSessions,
) {
  const refuse = (status: number, message: string) =>
    reply.code(status).send(errorResponse(null, { code: ErrorCode.InvalidRequest, message }));
  const unbatched = postedBatchRefusal(context.sessionId, context.versionHeader);
  if (unbatched !== null) return refuse(400, unbatched);
  let resolved: Awaited<ReturnType<typeof sessionOf<CallScope>>>;
  try {
    resolved = await sessionOf(context, sessions);
  } catch (error) {
    // The session's lookup failed (an outage: 503, retry): each request of the batch is told so
    // by its own id, as a failure of each would be (a batch of no request: one error, id null).
    const failure = route.failure(error);
    const ids = elements
      .map((element) => classifyMessage(element))
      .flatMap((message) => (message.kind === 'request' ? [message.id] : []));
    const answers = ids.map((id) => errorResponse(id, failure.error));
    return reply
      .code(failure.status)
      .headers(failure.headers)
      .type('application/json')
      .send(answers.length > 0 ? answers : errorResponse(null, failure.error));
  }
  if ('refused' in resolved) return reply.code(resolved.status).send(errorResponse(null, resolved.refused));
  const { scope, revision } = resolved;
  const connection = sessionConnection(
    sessions,
    { ...context, hints: postedHints(context.sessionId, context.versionHeader), scope, revision },
    (fields, text) => request.log.warn(fields, text),
  );
  const whole = route.dispatcher.batchRefusal(connection, elements.length, 'POST');
  if (whole !== null) return refuse(400, whole);

  const from: PostedFrom = {
    tenantId: context.tenantId,
    sessionId: context.sessionId,
    signals: route.signals,
    debug: (fields, text) => request.log.debug(fields, text),
  };
  const responses: string[] = [];
  const messages = elements.map((element) => ({ element, message: readMessage(element) }));
  const hasRequest = messages.some(({ message }) => message.kind === 'request');
  // As for a single POST: only a session was ever asked anything, so only a session can answer.
  if (context.sessionId === undefined && messages.some(({ message }) => message.kind === 'response')) {
    return refuse(400, 'a response answers a request of this server, which only a session receives');
  }

  // Set up before the first element is served: a request starts as its element is read, so that a
  // cancel later in the same batch finds it running.
  const raw = reply.raw;
  let stream: SseStream | null = null;
  const toSse = () => {
    if (!stream && !raw.writableEnded && !raw.destroyed) {
      // Room for every notification a reader that keeps up would get; one that stalls loses
      // notifications (replaceable), never the answer (final).
      stream = new SseStream(raw, { capacity: 64, coalesce: 'by-key', keepaliveMs: route.keepaliveMs });
      stream.open();
    }
    return stream;
  };
  let sent = 0;
  const send = (message: Record<string, unknown>) => {
    sent += 1;
    toSse()?.push({ kind: 'replaceable', key: `message-${sent}`, value: { data: message } });
  };
  let sseTimer: NodeJS.Timeout | undefined;
  if (hasRequest) {
    reply.hijack();
    sseTimer = setTimeout(toSse, route.sseAfterMs);
  }
  const running: Promise<void>[] = [];
  for (const { element, message } of messages) {
    if (message.kind === 'invalid' || message.kind === 'unstorable') {
      // A notification with a value that cannot be taken in is ignored (no id to answer).
      if (message.kind === 'invalid' || !message.notification) {
        responses.push(JSON.stringify(errorResponse(message.id, message.error)));
      }
      continue;
    }
    if (message.kind === 'response') {
      honourPostedResponse(scope, element as Record<string, unknown>, from);
      continue;
    }
    if (message.kind === 'notification') {
      if (message.method === 'notifications/cancelled') honourPostedCancel(scope, message.params, from);
      continue;
    }
    const { id } = message;
    running.push(
      new Promise<void>((settled) => {
        // The server closing ends the request with what the core answers then (not a cancel).
        const stopping = new AbortController();
        const endCall = (reason: ServerStopping) => stopping.abort(reason);
        route.dispatcher.request(id, message.method, message.params, connection, {
          send,
          // The response closed before the answer: every request still running is cancelled.
          gone: route.gone,
          stopping: stopping.signal,
          batched: true,
          running: () => route.calls.add(endCall),
          failure: route.failure,
          end: (answer) => {
            route.calls.delete(endCall);
            if (answer.kind === 'answer') {
              const { outcome } = answer;
              responses.push(
                outcome.kind === 'result'
                  ? resultJson(id, outcome.result)
                  : JSON.stringify(errorResponse(id, outcome.error)),
              );
            }
            settled();
          },
        });
      }),
    );
  }
  if (!hasRequest) {
    if (responses.length === 0) return reply.code(202).send();
    return reply
      .code(200)
      .type('application/json; charset=utf-8')
      .send(`[${responses.join(',')}]`);
  }

  await Promise.all(running);
  clearTimeout(sseTimer);
  if (raw.writableEnded || raw.destroyed) return;
  const answer = `[${responses.join(',')}]`;
  const open = stream as SseStream | null;
  if (open) {
    // JSON-RPC never answers with an empty array: a stream whose every request was cancelled just ends.
    if (responses.length === 0) open.close();
    else open.push({ kind: 'final', value: { data: JSON.parse(answer) } });
    return;
  }
  if (responses.length === 0) {
    // Every request was cancelled by a POSTed notification: nothing to answer.
    raw.writeHead(204);
    raw.end();
    return;
  }
  raw.writeHead(200, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(answer),
  });
  raw.end(answer);
}
