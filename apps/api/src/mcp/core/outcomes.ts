import { toJsonRpcError } from '@taskgate/errors';
import { type Capabilities, ErrorCode, type JsonRpcError } from '@taskgate/protocol';

/** What a method handler produces: a result, or a JSON-RPC error (with the HTTP status to use). */
export type MethodOutcome =
  | { readonly kind: 'result'; readonly result: Readonly<Record<string, unknown>> }
  | { readonly kind: 'error'; readonly error: JsonRpcError; readonly httpStatus: number };

/** -32602 for params the method cannot use (400 on 2026-07-28 HTTP; 2025-11-25 answers on a 200). */
export function invalidParams(message: string, httpStatus = 400): MethodOutcome {
  return { kind: 'error', httpStatus, error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${message}` } };
}

/** -32021 naming what the client did not declare (basic/index: HTTP 400), before anything runs. */
export function missingCapability(requiredCapabilities: Capabilities, message: string): MethodOutcome {
  return {
    kind: 'error',
    httpStatus: 400,
    error: { code: ErrorCode.MissingRequiredClientCapability, message, data: { requiredCapabilities } },
  };
}

/** A refused call (unknown tool, bad arguments, an idempotency problem) as its JSON-RPC error. */
export function refusal(error: unknown): MethodOutcome {
  return { kind: 'error', error: toJsonRpcError(error), httpStatus: 200 };
}
