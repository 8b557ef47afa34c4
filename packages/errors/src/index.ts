export {
  JSON_RPC_INTERNAL_ERROR,
  JSON_RPC_INVALID_PARAMS,
  JSON_RPC_SERVICE_UNAVAILABLE,
  type JsonRpcError,
  toJsonRpcError,
} from './json-rpc-error.ts';
export { type ErrorCode, type ErrorDefinition, errorRegistry, isErrorCode } from './registry.ts';
export { isTaskgateError, TaskgateError, type TaskgateErrorOptions } from './taskgate-error.ts';
