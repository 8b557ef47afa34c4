export {
  CatalogView,
  type CatalogViewOptions,
  DEFAULT_CATALOG_POLL_MS,
} from './catalog/catalog-view.ts';
export {
  addContentWatch,
  CONTENT_CHANGED_CHANNEL,
  CONTENT_WATCHES_CHANNEL,
  type ContentWatchKey,
  claimContentWatches,
  contentWatchCounts,
  DEFAULT_WATCH_LEASE_MS,
  pairKey,
  recordContentChange,
  releaseContentWatches,
  removeContentWatch,
  type WantedWatch,
  wantedContentWatches,
} from './catalog/content-watches.ts';
export {
  CATALOG_CHANNEL,
  type CatalogTool,
  DEFAULT_CATALOG_WINDOW_MS,
  type InstanceTool,
  type ListCatalogOptions,
  listCatalog,
  listedToolNames,
  type PublishedTool,
  type PublishReport,
  publishTools,
  toolsByInstance,
} from './catalog/tool-catalog.ts';
export { ChannelListener, type ChannelListenerOptions } from './channel-listener.ts';
export {
  createPool,
  describeTarget,
  type PoolOptions,
  probeDatabase,
  redactConnectionString,
  workSucceededWithin,
} from './connection.ts';
export { isDatabaseUnavailable } from './connection-errors.ts';
export {
  CONSOLE_SESSION_IDLE_MS,
  CONSOLE_SESSION_MAX_MS,
  type ConsoleSession,
  deleteEndedConsoleSessions,
  endConsoleSession,
  findConsoleSession,
  insertConsoleSession,
} from './console-sessions/console-sessions.ts';
export {
  type EmbeddedPostgres,
  type EmbeddedPostgresOptions,
  startEmbeddedPostgres,
} from './embedded/embedded-postgres.ts';
export { type BatchWork, GroupCommit, type GroupCommitOptions, type TransactionRunner } from './group-commit.ts';
export {
  DEFAULT_HEARTBEAT_INTERVAL_MS,
  InstanceHeartbeat,
  type InstanceHeartbeatOptions,
} from './instances/instance-heartbeat.ts';
export {
  deleteStaleInstances,
  heartbeatInstance,
  type InstanceIdentity,
  type InstanceRecord,
  listInstances,
  markInstanceStopped,
  registerInstance,
} from './instances/instance-registry.ts';
export {
  type InstanceUpkeep,
  type InstanceUpkeepOptions,
  instanceUpkeep,
  type SweeperSettings,
} from './instances/instance-upkeep.ts';
export { createKysely } from './kysely.ts';
export {
  type ClaimOutcome,
  type CompletedClaim,
  claimCompletedKeys,
  claimKey,
  completeKey,
  deleteExpiredKeys,
  findKey,
  type KeyClaim,
  type KeyRecord,
  keyFingerprint,
} from './ledger/idempotency-keys.ts';
export { executeOnce, type LedgerOutcome } from './ledger/mutation-ledger.ts';
export { type MetricsSnapshot, readMetricsSnapshot } from './metrics-snapshot.ts';
export { defaultMigrationsDir, loadMigrations, type Migration } from './migrations/migration-files.ts';
export {
  assertKnownTarget,
  assertMigratable,
  type MigrationState,
  type MigrationStatus,
} from './migrations/migration-plan.ts';
export type { DownOptions } from './migrations/migration-runner.ts';
export {
  type AppliedStep,
  type MigrationLogger,
  type MigrationReport,
  MigrationRunner,
  type MigrationRunnerOptions,
  type PlannedStep,
} from './migrations/migration-runner.ts';
export {
  assertModuleName,
  type ModuleMigrations,
  type ModuleStatus,
  PLATFORM_MODULE,
} from './migrations/module-migrations.ts';
export { PGBOSS_SCHEMA, type PgBossSchemaState, requiredPgBossVersion } from './migrations/pgboss-schema.ts';
export { type OutageRetryOptions, retryWhileUnavailable } from './outage-retry.ts';
export {
  isOutboxEventId,
  listOutboxEvents,
  MAX_OUTBOX_PAGE,
  type OutboxEventQuery,
  type OutboxEventRecord,
  type OutboxGroup,
  type OutboxState,
  outboxEventsStatement,
  outboxSummary,
  outboxSummaryStatement,
  type RedeliverOutcome,
  redeliverOutboxEvent,
} from './outbox/outbox-admin.ts';
export {
  type ClaimedOutboxEvent,
  claimDueOutbox,
  compareIds,
  deleteDeliveredOutbox,
  markDelivered,
  markFailed,
  type OutboxClaim,
  type OutboxFailure,
  releaseOutboxClaims,
} from './outbox/outbox-claims.ts';
export { OUTBOX_CHANNEL, OutboxListener, type OutboxListenerOptions } from './outbox/outbox-listener.ts';
export { addOutboxEvents, insertOutboxEvents, type OutboxEvent } from './outbox/outbox-store.ts';
export { MAX_PREPARED_PER_CONNECTION, REPLAN_AFTER_EXECUTIONS } from './preparing-client.ts';
export { rawQuery } from './raw-query.ts';
export type {
  Database,
  InstanceKind,
  ReconciliationKind,
  TaskEventType,
  TaskMode,
  TaskStatus,
} from './schema.ts';
export { serverSecret } from './secrets/server-secrets.ts';
export { SerialRead } from './serial-read.ts';
export {
  DatabaseSessionSignals,
  MAX_SIGNAL_BYTES,
  SESSION_CHANNEL,
  type SessionSignal,
  type SessionSignals,
} from './sessions/mcp-session-signals.ts';
export {
  completeMcpSessionElicitation,
  deleteIdleMcpSessions,
  deleteMcpSession,
  findMcpSession,
  insertMcpSession,
  MAX_MCP_SESSION_RESOURCES,
  MAX_MCP_SESSION_URL_ELICITATIONS,
  MAX_MCP_SESSIONS_PER_TENANT,
  MCP_SESSION_IDLE_MS,
  type McpSessionRecord,
  noteMcpSessionElicitations,
  setMcpSessionLogLevel,
  subscribeMcpSessionResource,
  unsubscribeMcpSessionResource,
} from './sessions/mcp-sessions.ts';
export {
  ensureTaskQueue,
  LEGACY_TASK_QUEUE,
  TASK_QUEUE_OPTIONS,
  type TaskJobData,
  TaskQueues,
  TOOL_QUEUE_PREFIX,
  toolQueue,
} from './task-queue.ts';
export { type CancelTiming, readCancelTiming } from './tasks/cancel-timing.ts';
export { type LegacyJob, legacyJobTools, lockLegacyJobs } from './tasks/legacy-jobs.ts';
export { adoptParkedRequest, detachParkedRequest } from './tasks/parked-requests.ts';
export {
  findReconciliationItem,
  isReconciliationItemId,
  listOpenReconciliationItems,
  listReconciliationItems,
  openReconciliationItem,
  type ReconciliationFilter,
  type ReconciliationItem,
  type ResolveOutcome,
  resolveReconciliationItem,
} from './tasks/reconciliation-items.ts';
export { TaskAnnouncer } from './tasks/task-announcer.ts';
export {
  type CancelState,
  type ClaimedAttempt,
  type ClaimRule,
  type CompletionCheck,
  type CompletionInput,
  claimAttempt,
  claimAttempts,
  completeAttempts,
  finishAttempt,
  heldTaskCounts,
  heldTasks,
  lockForCompletion,
  type Outcome,
  type ProgressUpdate,
  parkForInput,
  readCancelStates,
  recordCancelObserved,
  recordProgress,
  releaseAttempt,
  strayAttempts,
} from './tasks/task-attempts.ts';
export {
  readTaskClocks,
  readTaskEvents,
  readTaskSteps,
  type TaskClocks,
  type TaskEventRecord,
  type TaskStepRecord,
} from './tasks/task-history.ts';
export { TaskListener, type TaskListenerOptions } from './tasks/task-listener.ts';
export {
  appendLogMessages,
  MAX_TASK_LOG_MESSAGES,
  type NewLogMessage,
  readLogMessages,
  type TaskLogMessage,
} from './tasks/task-log-messages.ts';
export {
  parseTaskNotification,
  TASK_CHANNEL,
  type TaskNotification,
  type TaskProgress,
  type TaskRecord,
} from './tasks/task-record.ts';
export {
  finishIrreversibleStep,
  readSteps,
  recordStep,
  type StepRecord,
  startIrreversibleStep,
} from './tasks/task-steps.ts';
export {
  type AnsweredInput,
  answerInput,
  type CancelOutcome,
  deleteExpiredTasks,
  findTask,
  findTasks,
  insertTasks,
  isUuid,
  type ListQuery,
  listTaskEvents,
  listTasks,
  listTasksStatement,
  type NewTask,
  requestCancel,
  type TaskCursor,
  type TaskEvent,
  type TaskPage,
} from './tasks/task-store.ts';
export {
  DEFAULT_LOST_AFTER_MS,
  DEFAULT_MAX_QUEUE_MS,
  type SweepReport,
  TaskSweeper,
  type TaskSweeperOptions,
} from './tasks/task-sweeper.ts';
export {
  cancelAbandonedInput,
  cancelOrphanedRequests,
  cancelUnheld,
  failOrphanedByEndedJobs,
  failPastMaxDeadline,
  failQueuedTooLong,
  failWithoutLiveJob,
} from './tasks/task-sweeps.ts';
export {
  type AnnouncedTask,
  HeldChanges,
  type TaskChange,
  type TaskChanges,
  type TaskWriter,
} from './tasks/task-writer.ts';
export { listTaskTenants, tenantSkipScan } from './tasks/tenant-list.ts';
export {
  type DurationPercentiles,
  type EndedCounts,
  type EndedToolStats,
  endedToolStatsStatement,
  type OpenToolCounts,
  openToolCountsStatement,
  readToolStats,
  type ToolStats,
  type ToolStatsWindow,
} from './tasks/tool-stats.ts';
