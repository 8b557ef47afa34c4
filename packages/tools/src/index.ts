export {
  builtinTools,
  chargeAccount,
  confirmDelete,
  conformanceTools,
  failingJob,
  greet,
  multiInput,
  protocolErrorJob,
  reserveInventory,
  slowCompute,
  testToolWithTask,
} from './builtin/index.ts';
export {
  type ContentBlock,
  defineTool,
  type InputRequest,
  type RetryClass,
  type TaskSupport,
  type ToolAnnotations,
  type ToolContext,
  type ToolDefinition,
  type ToolResult,
  type ToolTimeouts,
  taskSupportOf,
} from './tool-definition.ts';
export {
  TaskCancelledError,
  TaskParkedError,
  TaskReleasedError,
  TaskTimeoutError,
  ToolProtocolError,
} from './tool-errors.ts';
export { type ArgumentCheck, type ArgumentProblem, ToolRegistry } from './tool-registry.ts';
