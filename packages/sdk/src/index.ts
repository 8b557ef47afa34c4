/**
 * @taskgate/sdk: what a tool author depends on. defineTool (and defineResource, defineResourceTemplate,
 * definePrompt), the ToolContext a handler gets, and
 * their types; nothing of the platform (no database, no HTTP), so a tool module stays small and
 * its tests need only this package.
 */

export {
  type Completer,
  type ContentContext,
  definePrompt,
  defineResource,
  defineResourceTemplate,
  type PromptArgument,
  type PromptDefinition,
  type PromptMessage,
  type PromptResult,
  promptDefinitionProblem,
  type ResourceContents,
  type ResourceDefinition,
  type ResourceTemplateDefinition,
  resourceDefinitionProblem,
  resourceTemplateDefinitionProblem,
  templateVariables,
  type WatchContext,
} from './content-definition.ts';
export {
  defineGateway,
  type GatewayDefinition,
  type GatewayToolSettings,
  gatewayDefinitionProblem,
} from './gateway-definition.ts';
export type {
  AudioContent,
  CommitContext,
  ContentAnnotations,
  ContentBlock,
  EmbeddedResource,
  ImageContent,
  InputRequest,
  OutboxEvent,
  QueryResult,
  ResourceLink,
  SpawnOptions,
  SpawnResult,
  StepOptions,
  TaskFetchInit,
  TaskScope,
  TextContent,
  ToolContext,
  ToolResult,
} from './tool-context.ts';
export { DEFAULT_SUBPROCESS_GRACE_MS } from './tool-context.ts';
export {
  defineTool,
  isGraceMs,
  MAX_SUBPROCESS_GRACE_MS,
  type RetryClass,
  type TaskSupport,
  type ToolAnnotations,
  type ToolDefinition,
  type ToolTimeouts,
  toolDefinitionProblem,
} from './tool-definition.ts';
export {
  RaceLostError,
  TaskCancelledError,
  TaskParkedError,
  TaskReleasedError,
  TaskTimeoutError,
  ToolProtocolError,
  URL_ELICITATION_REQUIRED,
  type UrlElicitation,
  UrlElicitationRequiredError,
} from './tool-errors.ts';
