import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ErrorCode, errorRegistry } from '@taskgate/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ModuleError } from '../modules/module-error.ts';
import { classifyFailure, type Failure, OUTAGE_RETRY_AFTER_SECONDS } from './failures.ts';

/** A route schema's answers for these statuses: each the shared Problem schema (server.ts adds it). */
export function problemResponses(...statuses: number[]) {
  return Object.fromEntries(statuses.map((status) => [status, Type.Ref('Problem')]));
}

/** RFC 9457 problem details, with Taskgate's stable code alongside. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly instance: string;
  /** A registry code, or a tool module's own (see ModuleError). */
  readonly code: ErrorCode | (string & {});
  readonly errors?: readonly unknown[];
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

export function problem(code: ErrorCode, detail: string, instance: string, errors?: readonly unknown[]): Problem {
  const definition = errorRegistry[code];
  return {
    type: `urn:taskgate:error:${code.toLowerCase().replaceAll('_', '-')}`,
    title: definition.title,
    status: definition.httpStatus,
    detail,
    instance,
    code,
    ...(errors && errors.length > 0 ? { errors } : {}),
  };
}

export function sendProblem(reply: FastifyReply, body: Problem): FastifyReply {
  // A header already set wins: an OAuth refusal's WWW-Authenticate names its resource and scope.
  for (const [name, value] of Object.entries(problemHeaders(body.code))) {
    if (!reply.hasHeader(name)) reply.header(name, value);
  }
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/** The headers a code's answer carries, whichever body format it goes out in. */
export function problemHeaders(code: string): Record<string, string> {
  if (code === 'TG_UNAUTHORIZED') return { 'www-authenticate': 'Bearer realm="taskgate"' };
  if (code === 'TG_SERVICE_UNAVAILABLE' || code === 'TG_ISSUER_UNAVAILABLE')
    return { 'retry-after': String(OUTAGE_RETRY_AFTER_SECONDS) };
  // RFC 9110 section 12.5.3: a 415 for a content coding says which codings are accepted.
  if (code === 'TG_CONTENT_ENCODING_UNSUPPORTED') return { 'accept-encoding': 'identity' };
  return {};
}

export function toProblem(error: unknown, request: FastifyRequest): Problem {
  if (error instanceof ModuleError) {
    return {
      type: `urn:taskgate:error:${error.code.toLowerCase().replaceAll('_', '-')}`,
      title: error.definition.title,
      status: error.definition.httpStatus,
      detail: error.message,
      instance: request.url,
      code: error.code,
      ...(error.errors && error.errors.length > 0 ? { errors: error.errors } : {}),
    };
  }
  return problemOf(classifyFailure(error), request.url);
}

function problemOf(failure: Failure, instance: string): Problem {
  return problem(failure.code, failure.detail, instance, failure.errors);
}

/**
 * Every way a request can fail ends as problem+json: route errors (setErrorHandler), unknown
 * routes, the errors Fastify raises before routing (a path that is not valid percent-encoded UTF-8,
 * a path parameter past maxParamLength), and those Node's HTTP parser raises before there is a
 * request at all (clientError: headers over 16 KiB, bytes that are not HTTP, a request that did
 * not arrive in time). The last kind has no parsed path, so it cannot be told apart for /mcp and
 * is problem+json there too.
 */
export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toProblem(error, request);
    logFailure(request, body.status, error, body.code);
    return sendProblem(reply, body);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('TG_NOT_FOUND', `no endpoint answers ${request.method} ${request.url}`, request.url)),
  );
}

export function logFailure(request: FastifyRequest, status: number, error: unknown, code: string): void {
  if (status === 503) request.log.warn({ err: error, code }, 'the database is not answering');
  else if (status >= 500) request.log.error({ err: error, code }, 'request failed');
}

/** Fastify's `frameworkErrors` option: FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH, FST_ERR_ASYNC_CONSTRAINT. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const body = toProblem(error, request);
  logFailure(request, body.status, error, body.code);
  void sendProblem(reply, body);
}

/** Fastify's `clientErrorHandler` option, for errors of Node's HTTP parser (the `clientError` event). */
export function clientErrorHandler(this: FastifyInstance, error: Error & { code?: string }, socket: Duplex): void {
  // A reset connection has nobody left to answer (Node's own handler skips it too).
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const body =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? problem('TG_HEADERS_TOO_LARGE', 'the request headers are larger than the 16 KiB accepted', '')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? problem('TG_REQUEST_TIMEOUT', 'the request did not arrive in time', '')
        : problem('TG_HTTP_MALFORMED', 'the bytes received are not a valid HTTP/1.1 request', '');
  this.log.debug({ err: error, code: body.code }, 'client error');
  if (socket.writable) {
    const text = JSON.stringify(body);
    socket.write(
      `HTTP/1.1 ${body.status} ${STATUS_CODES[body.status]}\r\n` +
        `Content-Type: ${PROBLEM_CONTENT_TYPE}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
        `Connection: close\r\n\r\n${text}`,
    );
  }
  socket.destroy(error);
}
