import { errorRegistry, type ErrorCode as TaskgateCode, TaskgateError, toJsonRpcError } from '@taskgate/errors';
import { ErrorCode, type JsonRpcError } from '@taskgate/protocol';
import { challengeOf } from '../../http/auth.ts';
import { classifyFailure, OUTAGE_RETRY_AFTER_SECONDS } from '../../http/failures.ts';
import { problemHeaders } from '../../http/problem.ts';

/** A failed MCP request as it goes out: the HTTP status, the JSON-RPC error, and headers such as Retry-After. */
export interface RpcFailure {
  readonly status: number;
  readonly error: JsonRpcError;
  readonly headers: Record<string, string>;
  readonly taskgateCode: TaskgateCode;
}

/** The body is not JSON text a message can be read from: not UTF-8, not JSON, or not I-JSON (a key twice). */
const PARSE_ERRORS: ReadonlySet<TaskgateCode> = new Set([
  'TG_MALFORMED_JSON',
  'TG_ENCODING_INVALID',
  'TG_JSON_DUPLICATE_KEY',
]);

const INVALID_PARAMS: ReadonlySet<TaskgateCode> = new Set([
  'TG_JSON_TOO_DEEP',
  'TG_JSON_STRING_INVALID',
  'TG_JSON_NUMBER_INVALID',
]);

/**
 * The failure of an MCP request (HTTP or stdio) from the same classification REST uses: a body
 * that is not JSON is -32700, a database that does not answer is 503 with Retry-After and
 * Taskgate's -31503 (see toJsonRpcError), a value that cannot be stored -32602, any other refused
 * request -32600, and a bug -32603. `data.code` carries the Taskgate code in every case.
 */
export function rpcFailure(error: unknown): RpcFailure {
  const failure = classifyFailure(error);
  const status = errorRegistry[failure.code].httpStatus;
  const challenge = challengeOf(error);
  // An OAuth refusal's own WWW-Authenticate (resource metadata, scope) replaces the plain one.
  const headers =
    challenge === null
      ? problemHeaders(failure.code)
      : { ...problemHeaders(failure.code), 'www-authenticate': challenge };
  const data = { code: failure.code, ...(failure.errors ? { errors: failure.errors } : {}) };
  const rpc = (code: number, message: string): RpcFailure => ({
    status,
    headers,
    error: { code, message, data },
    taskgateCode: failure.code,
  });
  if (failure.code === 'TG_SERVICE_UNAVAILABLE') {
    const outage = new TaskgateError('TG_SERVICE_UNAVAILABLE', failure.detail, {
      details: { retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS },
    });
    return { status, headers, error: toJsonRpcError(outage), taskgateCode: failure.code };
  }
  if (PARSE_ERRORS.has(failure.code)) return rpc(ErrorCode.ParseError, `Parse error: ${failure.detail}`);
  if (failure.code === 'TG_INTERNAL') return rpc(ErrorCode.InternalError, 'internal error');
  if (INVALID_PARAMS.has(failure.code)) return rpc(ErrorCode.InvalidParams, `Invalid params: ${failure.detail}`);
  return rpc(ErrorCode.InvalidRequest, failure.detail);
}
