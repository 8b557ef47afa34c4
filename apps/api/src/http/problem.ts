import { type ErrorCode, errorRegistry, isTaskgateError } from '@taskgate/errors';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** RFC 9457 problem details, with Taskgate's stable code alongside. */
export interface Problem {
  readonly type: string;
  readonly title: string;
  readonly status: number;
  readonly detail: string;
  readonly instance: string;
  readonly code: ErrorCode;
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
  if (body.code === 'TG_UNAUTHORIZED') reply.header('www-authenticate', 'Bearer realm="taskgate"');
  return reply.code(body.status).type(PROBLEM_CONTENT_TYPE).send(body);
}

/**
 * Maps every error a route can raise to a problem: registered Taskgate errors as they are,
 * Fastify's own (schema validation, body parsing, size) to their codes, anything else to
 * TG_INTERNAL without leaking its message.
 */
export function toProblem(error: FastifyError, request: FastifyRequest): Problem {
  const instance = request.url;
  if (isTaskgateError(error)) {
    const errors = (error.details as { errors?: unknown[] }).errors;
    return problem(error.code, error.message, instance, errors);
  }
  if (error.validation) {
    const errors = error.validation.map((issue) => ({
      location: error.validationContext ?? 'body',
      path: issue.instancePath || '',
      message: issue.message ?? issue.keyword,
    }));
    const summary = errors.map((issue) => `${issue.location}${issue.path} ${issue.message}`).join('; ');
    return problem('TG_REQUEST_INVALID', `the request does not match its schema: ${summary}`, instance, errors);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return problem('TG_BODY_TOO_LARGE', 'the request body is larger than the 1 MiB the API accepts', instance);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return problem('TG_UNSUPPORTED_MEDIA_TYPE', 'send the request body as application/json', instance);
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return problem('TG_MALFORMED_JSON', `the request body is not valid JSON: ${error.message}`, instance);
  }
  if (error instanceof SyntaxError && error.statusCode === 400) {
    return problem('TG_MALFORMED_JSON', `the request body is not valid JSON: ${error.message}`, instance);
  }
  if (isConnectionError(error)) {
    return problem('TG_SERVICE_UNAVAILABLE', 'the database did not answer; retry later', instance);
  }
  return problem('TG_INTERNAL', 'an internal error occurred; it has been logged', instance);
}

function isConnectionError(error: { code?: unknown }): boolean {
  return typeof error.code === 'string' && /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|57P0[1-3]|08\d\d\d)$/.test(error.code);
}

export function installProblemHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const body = toProblem(error, request);
    if (body.status >= 500) request.log.error({ err: error, code: body.code }, 'request failed');
    return sendProblem(reply, body);
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, problem('TG_NOT_FOUND', `no endpoint answers ${request.method} ${request.url}`, request.url)),
  );
}
