import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import { ErrorCode, errorResponse } from '@taskgate/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { McpCore } from '../../core/mcp-core.ts';
import type { ServerIdentity } from '../../core/server-info.ts';
import { ServerStopping } from '../../core/server-stopping.ts';
import { StreamConnection } from '../stream/stream-connection.ts';
import { acceptsEventStream } from './http-guards.ts';

/** Where a client of the HTTP+SSE transport opens its stream, and where it POSTs its messages. */
export const SSE_STREAM_PATH = '/sse';
export const SSE_MESSAGES_PATH = '/messages';
/**
 * Streams one process holds at most: each is a connection's whole state, kept until it closes.
 * One tenant holds at most half of them, so it cannot lock the others out.
 */
export const MAX_SSE_SESSIONS = 1_000;
/** A connection whose client has POSTed nothing this long after it opened is closed. */
export const SSE_FIRST_MESSAGE_MS = 60_000;
/** Unread answers a connection may hold before it is closed (a client that POSTs and never reads). */
export const MAX_SSE_BUFFERED_BYTES = 16 * 1024 * 1024;

export interface HttpSseOptions {
  readonly core: McpCore;
  readonly server: ServerIdentity;
  /** The tenant of a request, as /mcp's authentication resolved it. */
  readonly tenantOf: (request: FastifyRequest) => string;
  readonly keepaliveMs: number;
  /** When the server closes, requests still in flight get this long before they are ended. */
  readonly shutdownGraceMs: number;
  readonly maxSessions?: number;
  readonly firstMessageMs?: number;
}

interface Session {
  readonly tenantId: string;
  /** Until the client's first POST: then cleared. */
  firstMessage: NodeJS.Timeout | null;
  readonly connection: StreamConnection;
  readonly output: Writable;
  readonly res: ServerResponse;
}

/**
 * The HTTP+SSE transport of 2024-11-05 (basic/transports "HTTP with SSE"), which clients built
 * before Streamable HTTP still speak (the SDK's SSEClientTransport, an "SSE" server in a client's
 * settings). A GET of /sse opens the connection: its first event, `endpoint`, names where the
 * client POSTs its messages (`/messages?sessionId=…`), and every message of the server's —
 * responses, progress, requests to the client — is a `message` event on that one stream. It is
 * stdio's shape (one message channel each way), so a connection is a StreamConnection: the POSTed
 * messages are its lines and the stream its stdout, with the same handshake, negotiation, ping,
 * cancellation, backpressure and 2025-11-25 task status notifications. Closing the stream is the
 * end of stdin: every request still in flight is cancelled, its task too.
 *
 * A connection lives in the process that holds its stream: a POST that reaches another instance
 * is a 404, so a deployment routes /messages by its sessionId to where /sse went (the transport
 * has no way to move a stream). 2026-07-28 deprecates this transport; Streamable HTTP at /mcp is
 * what new clients use.
 */
export function registerHttpSse(scope: FastifyInstance, options: HttpSseOptions): { close(): Promise<void> } {
  const sessions = new Map<string, Session>();
  const stopping = new AbortController();
  const maxSessions = options.maxSessions ?? MAX_SSE_SESSIONS;
  const perTenant = Math.max(1, Math.floor(maxSessions / 2));
  const held = new Map<string, number>();

  // HEAD would run this handler (Fastify exposes a HEAD route for each GET) and open a stream
  // whose headers Node never sends: a connection slot held by nothing.
  scope.get(SSE_STREAM_PATH, { schema: { hide: true }, exposeHeadRoute: false }, async (request, reply) => {
    if (!acceptsEventStream(request.headers.accept)) {
      return refuse(reply, 406, 'the Accept header must allow text/event-stream');
    }
    if (stopping.signal.aborted) return refuse(reply, 503, 'the server is shutting down; connect again', '1');
    const tenantId = options.tenantOf(request);
    const ofTenant = held.get(tenantId) ?? 0;
    if (sessions.size >= maxSessions || ofTenant >= perTenant) {
      request.log.warn({ sessions: sessions.size, ofTenant }, 'an HTTP+SSE connection was refused: too many open');
      const holder = ofTenant >= perTenant ? 'this tenant holds' : 'this server holds';
      const count = ofTenant >= perTenant ? perTenant : maxSessions;
      return refuse(reply, 503, `${holder} ${count} HTTP+SSE connections already; connect again later`, '5');
    }
    const sessionId = randomUUID();
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      // A proxy that buffers (nginx) would hold every response until the stream ends.
      'x-accel-buffering': 'no',
    });
    res.write(`event: endpoint\ndata: ${SSE_MESSAGES_PATH}?sessionId=${sessionId}\n\n`);
    const output = sseOutput(res, (buffered) =>
      request.log.warn({ sessionId, buffered }, 'an HTTP+SSE connection was closed: its client does not read it'),
    );
    const connection = new StreamConnection({
      core: options.core,
      output,
      tenantId,
      server: options.server,
      logger: {
        debug: (fields, message) => request.log.debug({ ...fields, sessionId }, message),
        warn: (fields, message) => request.log.warn({ ...fields, sessionId }, message),
      },
      stopping: stopping.signal,
      // This transport is the handshake's: a request before initialize is refused as such.
      handshakeOnly: true,
    });
    // A client that opens a stream and never speaks holds a slot for nothing.
    const firstMessage = setTimeout(() => {
      request.log.warn({ sessionId }, 'an HTTP+SSE connection was closed: its client sent nothing');
      res.destroy();
    }, options.firstMessageMs ?? SSE_FIRST_MESSAGE_MS);
    firstMessage.unref();
    sessions.set(sessionId, { tenantId, firstMessage, connection, output, res });
    held.set(tenantId, ofTenant + 1);
    const keepalive = setInterval(() => {
      if (!res.writableNeedDrain) res.write(': keepalive\n\n');
    }, options.keepaliveMs);
    keepalive.unref();
    res.on('close', () => {
      clearInterval(keepalive);
      clearTimeout(firstMessage);
      if (sessions.delete(sessionId)) {
        const left = (held.get(tenantId) ?? 1) - 1;
        if (left > 0) held.set(tenantId, left);
        else held.delete(tenantId);
      }
      connection.end('the client closed the SSE stream');
    });
  });

  scope.post(SSE_MESSAGES_PATH, { schema: { hide: true } }, async (request, reply) => {
    const sessionId = (request.query as { sessionId?: unknown } | undefined)?.sessionId;
    const session = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    // Another tenant's connection is as unknown as one that never was.
    if (!session || session.tenantId !== options.tenantOf(request)) {
      return refuse(
        reply,
        typeof sessionId === 'string' ? 404 : 400,
        typeof sessionId === 'string'
          ? 'unknown sessionId: its SSE stream is closed, or held by another server; open /sse again'
          : 'the sessionId query parameter is required: POST to the endpoint the SSE stream named',
      );
    }
    if (request.body === undefined) return refuse(reply, 400, 'the body must be one JSON-RPC message, as JSON');
    if (session.firstMessage) {
      clearTimeout(session.firstMessage);
      session.firstMessage = null;
    }
    // The message is the connection's, and so is its answer (on the stream): the POST says only
    // that it was taken. A body that is not JSON never gets here (-32700 on this response).
    session.connection.receive(request.body);
    return reply.code(202).send();
  });

  return {
    /**
     * Ends every connection for the server's close: each gets the grace period for its requests,
     * then what is still running is stopped (answered, not cut: a task handed over or a retryable
     * -31503) and, once its answers are written, its stream ends.
     */
    async close() {
      const open = [...sessions.values()];
      const settled = () => Promise.all(open.map(({ connection }) => connection.settled()));
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        settled(),
        new Promise<void>((resolve) => {
          grace = setTimeout(resolve, options.shutdownGraceMs);
          grace.unref();
        }),
      ]);
      clearTimeout(grace);
      stopping.abort(new ServerStopping());
      // A subscription ends only here (its result, then notifications/cancelled); the stop above
      // has the requests answer. Then, once every answer is written, the streams end.
      for (const { connection } of open) connection.shutdown();
      await settled();
      for (const { output, res } of open) output.end(() => res.end());
    },
  };
}

function refuse(reply: FastifyReply, status: number, message: string, retryAfter?: string) {
  if (retryAfter !== undefined) reply.header('retry-after', retryAfter);
  return reply
    .code(status)
    .type('application/json')
    .send(errorResponse(null, { code: ErrorCode.InvalidRequest, message }));
}

/**
 * The connection's stdout: each line it writes is one message, sent as one `message` event.
 * Backpressure reaches the connection as on a pipe (writableNeedDrain: progress is dropped, the
 * rest waits), and a stream the client has closed takes what is still written and drops it. A
 * client that POSTs but does not read its stream is not kept past MAX_SSE_BUFFERED_BYTES of
 * unread answers: its connection is closed, which cancels what it still runs, rather than any
 * answer dropped from a stream that stays open.
 */
function sseOutput(res: ServerResponse, onOverflow: (buffered: number) => void): Writable {
  const output = new (class extends Writable {
    override write(chunk: unknown, ...rest: unknown[]): boolean {
      if (this.writableLength > MAX_SSE_BUFFERED_BYTES) {
        if (!res.destroyed) {
          onOverflow(this.writableLength);
          res.destroy();
        }
        return false;
      }
      return (super.write as (...args: unknown[]) => boolean)(chunk, ...rest);
    }
  })({
    decodeStrings: false,
    highWaterMark: 64 * 1024,
    write(chunk: string | Buffer, _encoding, callback) {
      if (res.destroyed || res.writableEnded) return callback();
      const line = String(chunk).replace(/\n$/, '');
      if (res.write(`event: message\ndata: ${line}\n\n`)) return callback();
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        callback();
      };
      res.on('drain', done);
      res.on('close', done);
    },
  });
  output.on('error', () => {});
  return output;
}
