export { CALL_POLICY_META } from './call-policy.ts';
export { type CancelledParams, parseCancelledParams } from './cancellation.ts';
export { type Capabilities, missingCapabilities } from './client-capabilities.ts';
export { decodeHeaderValue, encodeHeaderValue } from './header-values.ts';
export {
  classifyMessage,
  ErrorCode,
  errorResponse,
  type IncomingMessage,
  type JsonRpcError,
  type JsonRpcId,
  resultResponse,
} from './json-rpc.ts';
export { type JsonTextProblem, type JsonTextProblemCode, type JsonTextResult, parseJsonText } from './json-text.ts';
export {
  checkJsonValue,
  invalidJsonValueError,
  type JsonValueCheckOptions,
  type JsonValueProblem,
  type JsonValueProblemCode,
  MAX_JSON_DEPTH,
} from './json-value-check.ts';
export { isLogLevel, LOG_LEVELS, type LogLevel, logLevelPasses } from './logging.ts';
export {
  HANDSHAKE_VERSIONS,
  LATEST_PROTOCOL_VERSION,
  META,
  negotiateHandshake,
  PER_REQUEST_VERSIONS,
  type RevisionHints,
  type RevisionInfo,
  type RevisionKind,
  requestRevisionKind,
  revisionInfo,
  revisionKindOf,
  SUPPORTED_PROTOCOL_VERSIONS,
  WITHOUT_VERSION_HEADER,
} from './protocol-versions.ts';
export {
  checkMetaFields,
  checkRequestMetadata,
  type HeaderParameter,
  headerParameterProblem,
  headerParametersOf,
  type MetadataCheck,
  type RequestHeaders,
  type RequestMetadata,
} from './request-metadata.ts';
export {
  progressOfTask,
  TASK_PROGRESS_META,
  type TaskProgressMeta,
  taskProgressMeta,
} from './task-progress.ts';
export { declaresTasks, TASK_METHODS, TASKS_EXTENSION, TASKS_REQUIRED } from './tasks-extension.ts';
