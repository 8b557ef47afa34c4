import { TaskgateError } from './taskgate-error.ts';

/** A JSON-RPC 2.0 error object, as an MCP response carries it. */
export interface JsonRpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: Readonly<Record<string, unknown>>;
}

export const JSON_RPC_INVALID_PARAMS = -32602;
export const JSON_RPC_INTERNAL_ERROR = -32603;
/**
 * Taskgate's code for "the database is not answering; retry later" (TG_SERVICE_UNAVAILABLE). The
 * 2026-07-28 spec (basic/index "Error Codes") keeps -32000…-32019 as legacy that new
 * implementations SHOULD NOT use, reserves -32020…-32099 for codes the spec itself defines, and
 * asks that codes for purposes it does not define be allocated outside JSON-RPC's reserved
 * -32768…-32000. So not -32603 (a bug, not worth retrying) and not -32000: -31503, whose digits
 * echo the HTTP 503 that carries it over HTTP.
 */
export const JSON_RPC_SERVICE_UNAVAILABLE = -31503;

/** Why a tools/call was refused as invalid params; `data.reason` tells a client which. */
const INVALID_PARAMS_REASONS: Partial<Record<TaskgateError['code'], string>> = {
  TG_TOOL_UNKNOWN: 'unknown_tool',
  TG_TOOL_ARGUMENTS_INVALID: 'invalid_arguments',
  TG_IDEMPOTENCY_KEY_MISSING: 'idempotency_key_missing',
  TG_IDEMPOTENCY_KEY_INVALID: 'idempotency_key_invalid',
  TG_IDEMPOTENCY_KEY_MISMATCH: 'idempotency_key_mismatch',
  TG_IDEMPOTENCY_KEY_IN_PROGRESS: 'idempotency_key_in_progress',
  TG_REQUEST_STATE_INVALID: 'request_state_invalid',
  TG_INPUT_RESPONSES_INVALID: 'input_responses_invalid',
};

/**
 * The JSON-RPC error an MCP server answers for a refused call. The MCP spec reports unknown tools
 * and invalid arguments as -32602 (Invalid params); a key problem is the same kind of refusal, told
 * apart by `data.reason`. A database outage is -31503 (retry later); anything unexpected is
 * -32603 without its internal message.
 */
export function toJsonRpcError(error: unknown): JsonRpcError {
  if (error instanceof TaskgateError && error.code === 'TG_SERVICE_UNAVAILABLE') {
    return { code: JSON_RPC_SERVICE_UNAVAILABLE, message: error.message, data: { ...error.details, code: error.code } };
  }
  if (error instanceof TaskgateError) {
    const reason = INVALID_PARAMS_REASONS[error.code];
    if (reason !== undefined) {
      return {
        code: JSON_RPC_INVALID_PARAMS,
        message: error.message,
        data: { ...error.details, reason, code: error.code },
      };
    }
    if (error.definition.httpStatus < 500) {
      return { code: JSON_RPC_INVALID_PARAMS, message: error.message, data: { ...error.details, code: error.code } };
    }
  }
  return { code: JSON_RPC_INTERNAL_ERROR, message: 'internal error', data: { code: 'TG_INTERNAL' } };
}
