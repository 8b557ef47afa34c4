/**
 * JSON-RPC 2.0 as MCP uses it: message classification and the error codes the spec assigns. Pure:
 * the transports (HTTP, stdio) parse bytes into values and hand them here.
 */

export type JsonRpcId = string | number;

export interface JsonRpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2026-07-28: HTTP headers do not match the body, or a required header is missing/malformed. */
  HeaderMismatch: -32020,
  /** 2026-07-28: the request needs a client capability the client did not declare. */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the requested protocol version is not one this server implements. */
  UnsupportedProtocolVersion: -32022,
} as const;

export type IncomingMessage =
  | {
      readonly kind: 'request';
      readonly id: JsonRpcId;
      readonly method: string;
      readonly params: Readonly<Record<string, unknown>> | undefined;
    }
  | {
      readonly kind: 'notification';
      readonly method: string;
      readonly params: Readonly<Record<string, unknown>> | undefined;
    }
  | { readonly kind: 'response'; readonly id: JsonRpcId | null }
  /** Not a JSON-RPC message; `id` is echoed when it could be read, as the spec asks. */
  | { readonly kind: 'invalid'; readonly id: JsonRpcId | null; readonly error: JsonRpcError };

/** Classifies one decoded JSON value. Batches (arrays) are not part of MCP since 2025-06-18. */
export function classifyMessage(value: unknown): IncomingMessage {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return invalid(
      null,
      Array.isArray(value) ? 'JSON-RPC batches are not supported' : 'a JSON-RPC message is an object',
    );
  }
  const message = value as Record<string, unknown>;
  const id = isId(message.id) ? message.id : null;
  if (message.jsonrpc !== '2.0') return invalid(id, 'jsonrpc must be "2.0"');
  if ('result' in message || 'error' in message) {
    if ('method' in message) return invalid(id, 'a message is a request or a response, not both');
    if ('result' in message && 'error' in message) return invalid(id, 'a response has a result or an error, not both');
    // An error may answer with id null: the request it answers could not be read (JSON-RPC 5.1).
    if (!isId(message.id) && !(message.id === null && 'error' in message)) {
      return invalid(null, 'a response needs the id of the request it answers');
    }
    const error = message.error;
    if (
      'error' in message &&
      (typeof error !== 'object' ||
        error === null ||
        !Number.isInteger((error as { code?: unknown }).code) ||
        typeof (error as { message?: unknown }).message !== 'string')
    ) {
      return invalid(id, 'a response error is an object with an integer code and a string message');
    }
    return { kind: 'response', id };
  }
  if (!('method' in message) && 'id' in message) {
    return invalid(id, 'a response has a result or an error; a request has a method');
  }
  if (typeof message.method !== 'string' || message.method === '')
    return invalid(id, 'method must be a non-empty string');
  if (
    message.params !== undefined &&
    (message.params === null || typeof message.params !== 'object' || Array.isArray(message.params))
  ) {
    return invalid(id, 'params must be an object');
  }
  const params = message.params as Readonly<Record<string, unknown>> | undefined;
  if (!('id' in message)) return { kind: 'notification', method: message.method, params };
  if (!isId(message.id)) return invalid(null, 'id must be a string or an integer');
  return { kind: 'request', id: message.id, method: message.method, params };
}

export function errorResponse(id: JsonRpcId | null, error: JsonRpcError) {
  return { jsonrpc: '2.0' as const, id, error };
}

export function resultResponse(id: JsonRpcId, result: unknown) {
  return { jsonrpc: '2.0' as const, id, result };
}

function isId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isSafeInteger(value));
}

function invalid(id: JsonRpcId | null, message: string): IncomingMessage {
  return { kind: 'invalid', id, error: { code: ErrorCode.InvalidRequest, message: `Invalid Request: ${message}` } };
}
