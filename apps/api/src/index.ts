export { type ApiRole, type ApiRoleOptions, type PreparedApiRole, prepareApiRole, startApiRole } from './api-role.ts';
export { CONSOLE_CSP, registerConsoleRoutes } from './console/console-routes.ts';
export { ConsoleSessions } from './console/console-sessions.ts';
export { CSRF_HEADER } from './console/csrf.ts';
export {
  type CheckState,
  RECENT_WORK_MS,
  type ReadinessProbe,
  type ReadinessReport,
  readinessReport,
  registerHealthRoutes,
} from './health-routes.ts';
export { type Authenticator, type AuthenticatorOptions, type Caller, createAuthenticator } from './http/auth.ts';
export { SCOPE_GROUPS, type ScopeGroup, scopeName } from './http/oauth/scopes.ts';
export {
  createTokenVerifier,
  DEFAULT_LEEWAY_SECONDS,
  type OAuthSettings,
  type TokenVerifier,
  type TokenVerifierOptions,
} from './http/oauth/token-verifier.ts';
export { type Problem, problem, toProblem } from './http/problem.ts';
export { TENANT_PATTERN } from './http/tenant-name.ts';
export { LedgerService } from './ledger/ledger-service.ts';
export type { McpCore } from './mcp/core/mcp-core.ts';
export type { RequestContext } from './mcp/core/request-context.ts';
export { createMcpCore, type McpCoreOptions } from './mcp/core-assembly.ts';
export { RemoteWatches, type RemoteWatchesOptions } from './mcp/methods/remote-watches.ts';
export {
  databaseSessionStore,
  memorySessionStore,
  type SessionStore,
} from './mcp/transports/http/handshake-sessions.ts';
export { ProgressStream } from './mcp/transports/http/progress-stream.ts';
export { StdioFront } from './mcp/transports/stream/stdio-front.ts';
export { StreamConnection, type StreamConnectionOptions } from './mcp/transports/stream/stream-connection.ts';
export {
  IdempotentMutation,
  type MutationCall,
  type MutationDefinition,
  type MutationOutcome,
  type MutationTransaction,
} from './modules/idempotent-mutation.ts';
export { ModuleError } from './modules/module-error.ts';
export { type RouteServices, registerModuleRoutes } from './modules/module-routes.ts';
export { type ApiServerOptions, BODY_LIMIT_BYTES, createApiServer } from './server.ts';
export { SseStream, type SseStreamOptions } from './sse/sse-stream.ts';
export { openTaskServices, type TaskServices, type TaskServicesOptions } from './task-services.ts';
export { decodeCursor, encodeCursor } from './tasks/task-cursor.ts';
export { TaskEventsHub } from './tasks/task-events-hub.ts';
export {
  type ClockCaps,
  type CreateTaskInput,
  cappedClocks,
  type TaskListing,
  TaskService,
  type TaskServiceOptions,
} from './tasks/task-service.ts';
export { type TaskReading, TaskWatch, TaskWatcher, type WatchOptions } from './tasks/task-watch.ts';
