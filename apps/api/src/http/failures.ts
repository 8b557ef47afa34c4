import { isDatabaseUnavailable } from '@taskgate/db';
import { type ErrorCode, isTaskgateError } from '@taskgate/errors';

/** What went wrong with a request, as a registered code: REST sends it as problem+json, /mcp as JSON-RPC. */
export interface Failure {
  readonly code: ErrorCode;
  readonly detail: string;
  readonly errors?: readonly unknown[];
}

/** How long a client should wait before retrying during a database outage (the Retry-After header). */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

const OUTAGE_DETAIL = `the database is not answering; retry after ${OUTAGE_RETRY_AFTER_SECONDS} seconds`;

interface FrameworkError {
  readonly code?: unknown;
  readonly statusCode?: unknown;
  readonly message?: unknown;
  readonly validation?: readonly { instancePath?: string; message?: string; keyword: string; params?: unknown }[];
  readonly validationContext?: string;
}

/** The database (or the service) not answering: an outage, worth another try, not the request's fault. */
export function isUnavailable(error: unknown): boolean {
  return isDatabaseUnavailable(error) || isTaskgateError(error, 'TG_SERVICE_UNAVAILABLE');
}

/**
 * Maps anything a request can raise to its failure: Taskgate errors as they are; Fastify's own
 * (schema validation, body parsing, sizes, bad URLs, every other FST_ERR_* a request can cause) to
 * their codes; a database that does not answer to TG_SERVICE_UNAVAILABLE (a 503 the client may
 * retry); anything else to TG_INTERNAL without its message, which may hold internals.
 */
export function classifyFailure(error: unknown): Failure {
  if (isTaskgateError(error)) {
    if (isDatabaseUnavailable(error)) return { code: 'TG_SERVICE_UNAVAILABLE', detail: OUTAGE_DETAIL };
    const errors = (error.details as { errors?: unknown[] }).errors;
    return { code: error.code, detail: error.message, ...(errors && errors.length > 0 ? { errors } : {}) };
  }
  const framework = (error ?? {}) as FrameworkError;
  if (framework.validation) {
    // A route whose schema requires the Idempotency-Key header (a mutation that runs only under a
    // key) answers a missing one with the code every other path gives it, not a schema error.
    if (framework.validationContext === 'headers' && framework.validation.every(missesIdempotencyKey)) {
      return { code: 'TG_IDEMPOTENCY_KEY_MISSING', detail: 'this operation requires an Idempotency-Key header' };
    }
    const errors = framework.validation.map((issue) => ({
      location: framework.validationContext ?? 'body',
      path: issue.instancePath || '',
      // An enum's message does not say what it allows; the answer should.
      message: `${issue.message ?? issue.keyword}${allowed(issue.params)}`,
    }));
    const summary = errors.map((issue) => `${issue.location}${issue.path} ${issue.message}`).join('; ');
    return { code: 'TG_REQUEST_INVALID', detail: `the request does not match its schema: ${summary}`, errors };
  }
  const message = typeof framework.message === 'string' ? framework.message : '';
  switch (framework.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'TG_BODY_TOO_LARGE', detail: 'the request body is larger than the 1 MiB the API accepts' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return { code: 'TG_UNSUPPORTED_MEDIA_TYPE', detail: 'send the request body as application/json' };
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'TG_MALFORMED_JSON', detail: `the request body is not valid JSON: ${message}` };
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'TG_HTTP_MALFORMED', detail: 'the request body does not match its Content-Length' };
    case 'FST_ERR_BAD_URL':
      return { code: 'TG_URL_INVALID', detail: 'the request path is not valid percent-encoded UTF-8' };
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return { code: 'TG_URI_TOO_LONG', detail: 'a path parameter is longer than the 100 characters a route accepts' };
  }
  // secure-json-parse refuses __proto__ and constructor.prototype keys with a SyntaxError.
  if (error instanceof SyntaxError && framework.statusCode === 400) {
    return { code: 'TG_MALFORMED_JSON', detail: `the request body is not valid JSON: ${message}` };
  }
  if (isDatabaseUnavailable(error)) return { code: 'TG_SERVICE_UNAVAILABLE', detail: OUTAGE_DETAIL };
  const status = typeof framework.statusCode === 'number' ? framework.statusCode : 500;
  if (status >= 400 && status < 500) return { code: byStatus(status), detail: message || 'the request was refused' };
  return { code: 'TG_INTERNAL', detail: 'an internal error occurred; it has been logged' };
}

/** Any other client error Fastify raises (a new FST_ERR_* included), by its status. */
function byStatus(status: number): ErrorCode {
  switch (status) {
    case 404:
      return 'TG_NOT_FOUND';
    case 408:
      return 'TG_REQUEST_TIMEOUT';
    case 413:
      return 'TG_BODY_TOO_LARGE';
    case 414:
      return 'TG_URI_TOO_LONG';
    case 415:
      return 'TG_UNSUPPORTED_MEDIA_TYPE';
    case 431:
      return 'TG_HEADERS_TOO_LARGE';
    default:
      return 'TG_REQUEST_INVALID';
  }
}

/** ": a, b, c" for an enum failure (ajv puts the values in params.allowedValues), else "". */
function allowed(params: unknown): string {
  const values = (params as { allowedValues?: unknown } | undefined)?.allowedValues;
  return Array.isArray(values) ? `: ${values.map((value) => JSON.stringify(value)).join(', ')}` : '';
}

function missesIdempotencyKey(issue: { keyword: string; params?: unknown }): boolean {
  return (
    issue.keyword === 'required' &&
    (issue.params as { missingProperty?: unknown })?.missingProperty === 'idempotency-key'
  );
}
