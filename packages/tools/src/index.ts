export {
  builtinTools,
  chargeAccount,
  failingJob,
  greet,
  protocolErrorJob,
  reserveInventory,
  slowCompute,
} from './builtin/index.ts';
export {
  type ContentBlock,
  defineTool,
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
  TaskReleasedError,
  TaskTimeoutError,
  ToolProtocolError,
} from './tool-errors.ts';
export { type ArgumentCheck, type ArgumentProblem, ToolRegistry } from './tool-registry.ts';
