export type { AnyTool } from './any-tool.ts';
export { type CatalogSource, CatalogTools } from './catalog-tools.ts';
export {
  ContentRegistry,
  type ContentSet,
  type ResolvedResource,
  type TemplateEntry,
} from './content-registry.ts';
export {
  ContentInputAsked,
  ContentRunError,
  complete,
  DEFAULT_CONTENT_TIMEOUT_MS,
  getPrompt,
  MAX_COMPLETION_VALUES,
  MAX_CONTENT_BYTES,
  type PromptArgumentsProblem,
  promptArguments,
  type ReadContents,
  readResource,
} from './content-run.ts';
export {
  CONTENT_TOOL_PREFIX,
  type ContentAnswer,
  type ContentRequest,
  contentRegistryOfTool,
  contentTool,
  contentToolName,
  PLATFORM_TOOL_PREFIX,
  type PublishedContent,
  publishedContent,
  type RemoteContentCall,
  type RemoteContentWatch,
  readPublishedContent,
  remoteContentSet,
} from './content-tool.ts';
export { InlineStore } from './inline-store.ts';
export {
  type InputAnswersProblem,
  inputAnswerProblem,
  inputAnswersProblem,
  inputResultProblem,
} from './input-answers.ts';
export { definedFields, LISTED_FIELDS } from './listed-fields.ts';
export { contentRegistryOf, loadToolModules, registryOf } from './module-loader.ts';
export { startResourceWatch } from './resource-watch.ts';
export { MAX_TOOL_RESULT_BYTES, toolResultProblem } from './result-check.ts';
export type { RunObserver } from './run-observer.ts';
export type {
  CommitOutcome,
  RunCancelState,
  RunOutcome,
  RunProgress,
  RunStore,
  RunTask,
} from './run-store.ts';
export { taskSupportOf } from './task-support.ts';
export type { ArgumentCheck, ArgumentProblem, CatalogContent, ToolCatalog, ToolSpec } from './tool-catalog.ts';
export { MODULE_EXPORTS, type ModuleErrorDefinition, type ModuleRoutes, type ToolModule } from './tool-module.ts';
export { ToolRegistry } from './tool-registry.ts';
export {
  INTERNAL_ERROR,
  type LogEntry,
  MAX_LOG_MESSAGES,
  REQUEST_TIMEOUT,
  type RunSettings,
  ToolRun,
} from './tool-run.ts';
export { UriTemplate } from './uri-template.ts';
