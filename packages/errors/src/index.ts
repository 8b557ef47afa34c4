export { type ErrorCode, type ErrorDefinition, errorRegistry, isErrorCode } from './registry.ts';
export { isTaskgateError, TaskgateError, type TaskgateErrorOptions } from './taskgate-error.ts';
