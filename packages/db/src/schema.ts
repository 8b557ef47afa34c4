import type { ColumnType, Generated, JSONColumnType } from 'kysely';

/**
 * Kysely's view of the tables that migrations/ creates. The SQL files are the source of truth;
 * test/schema/kysely-types.test.ts compares these names with the migrated database.
 */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';
export type TaskMode = 'request' | 'task';
export type TaskEventType =
  | 'created'
  | 'status_changed'
  | 'cancel_requested'
  | 'cancel_observed'
  | 'attempt_started'
  | 'attempt_lost'
  | 'attempt_released';

type Timestamp = ColumnType<Date, Date | string, Date | string>;
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type Json = JSONColumnType<object, string, string>;

export interface TasksTable {
  id: Generated<string>;
  tenant_id: string;
  tool: string;
  arguments: ColumnType<unknown, string | undefined, string>;
  status: ColumnType<TaskStatus, TaskStatus | undefined, TaskStatus>;
  status_message: string | null;
  result: Json | null;
  error: Json | null;
  mode: ColumnType<TaskMode, TaskMode | undefined, TaskMode>;
  cancel_requested_at: Timestamp | null;
  cancel_reason: string | null;
  /** Which path the cancel took (migration 0019; packages/reliability cancel-signal.ts). */
  cancel_signal: string | null;
  /** The creating request's W3C traceparent (migration 0019). */
  trace_parent: string | null;
  progress_value: number | null;
  progress_total: number | null;
  progress_message: string | null;
  progress_token: Json | null;
  idle_timeout_ms: number | null;
  max_timeout_ms: number | null;
  idle_deadline_at: Timestamp | null;
  max_deadline_at: Timestamp | null;
  // bigint arrives from pg as a string unless a type parser says otherwise.
  ttl_ms: ColumnType<string | null, number | string | null, number | string | null>;
  poll_interval_ms: number | null;
  attempt: Generated<number>;
  worker_id: string | null;
  heartbeat_at: Timestamp | null;
  created_at: GeneratedTimestamp;
  last_updated_at: GeneratedTimestamp;
  started_at: Timestamp | null;
  finished_at: Timestamp | null;
  expires_at: Timestamp | null;
  idempotency_key: string | null;
  /** Outstanding input requests while input_required (migration 0004). */
  input_requests: Json | null;
  /** Answers received so far, by request key. */
  input_responses: ColumnType<Record<string, unknown>, string | undefined, string>;
  /** The pg-boss job of the current run when it is not the first (whose id is the task's); migration 0005. */
  job_id: string | null;
  /** The API instance whose request a request-mode task serves. */
  api_instance_id: string | null;
  /** The fingerprint of the tool definition the task was accepted under (migration 0007). */
  tool_fingerprint: string | null;
  /** The calling request's log level; NULL: its ctx.log() messages are not kept (migration 0012). */
  log_level: string | null;
  log_count: Generated<number>;
  /** What the MCP client declared on the call that created the task (migration 0015). */
  client_capabilities: Json | null;
  /** A parked request-mode task with no request waiting on it ends cancelled then (migration 0016). */
  input_deadline_at: Timestamp | null;
  /** Retries that adopted the parked task; a gone request's cancel is fenced by it (migration 0017). */
  adoptions: Generated<number>;
}

export interface TaskEventsTable {
  id: ColumnType<string, never, never>;
  tenant_id: string;
  task_id: string;
  type: TaskEventType;
  from_status: TaskStatus | null;
  to_status: TaskStatus | null;
  attempt: number | null;
  reason: string | null;
  data: Json | null;
  created_at: GeneratedTimestamp;
}

export interface TaskgateMigrationsTable {
  version: number;
  name: string;
  checksum: string;
  applied_at: GeneratedTimestamp;
}

export type IdempotencyKeyState = 'pending' | 'completed';

export interface IdempotencyKeysTable {
  tenant_id: string;
  key: string;
  operation: string;
  fingerprint: string;
  state: ColumnType<IdempotencyKeyState, IdempotencyKeyState | undefined, IdempotencyKeyState>;
  result: Json | null;
  task_id: string | null;
  created_at: GeneratedTimestamp;
  completed_at: Timestamp | null;
  expires_at: Timestamp;
}

export interface TaskStepsTable {
  tenant_id: string;
  task_id: string;
  name: string;
  /** Null while an irreversible step is `started` (migration 0018). */
  result: Json | null;
  attempt: number;
  irreversible: ColumnType<boolean, boolean | undefined, boolean>;
  state: ColumnType<'started' | 'done', 'started' | 'done' | undefined, 'started' | 'done'>;
  created_at: GeneratedTimestamp;
}

/** ctx.log() messages and elicitation completions of durable tasks (migrations 0012, 0022; owner: tasks/task-log-messages.ts). */
export interface TaskLogMessagesTable {
  tenant_id: string;
  task_id: string;
  seq: number;
  attempt: number;
  /** 'log' | 'elicitation_complete' (migration 0022). */
  kind: ColumnType<string, string | undefined, string>;
  /** Null for a completion. */
  level: string | null;
  logger: string | null;
  data: Json;
  created_at: GeneratedTimestamp;
}

export interface ReconciliationItemsTable {
  id: ColumnType<string, never, never>;
  tenant_id: string;
  task_id: string;
  tool: string;
  idempotency_key: string | null;
  reason: string;
  created_at: GeneratedTimestamp;
  resolved_at: Timestamp | null;
  resolution: string | null;
  /** Migration 0018: what was left behind, what is known, and who decided. */
  kind: ColumnType<ReconciliationKind, ReconciliationKind | undefined, ReconciliationKind>;
  details: JSONColumnType<object, string | undefined, string>;
  resolved_by: string | null;
}

export type ReconciliationKind = 'unknown_outcome' | 'abandoned_with_effects';

export interface OutboxTable {
  id: ColumnType<string, never, never>;
  tenant_id: string;
  aggregate_type: string;
  aggregate_id: string;
  event_type: string;
  payload: Json;
  created_at: GeneratedTimestamp;
  available_at: GeneratedTimestamp;
  attempts: Generated<number>;
  last_error: string | null;
  leased_by: string | null;
  leased_until: Timestamp | null;
  delivered_at: Timestamp | null;
  dead_at: Timestamp | null;
}

export type InstanceKind = 'api' | 'worker';

export interface InstancesTable {
  id: string;
  kind: InstanceKind;
  host: string;
  pid: number;
  started_at: GeneratedTimestamp;
  heartbeat_at: GeneratedTimestamp;
  stopped_at: Timestamp | null;
}

/** One tool one instance serves (migration 0006); packages/db/src/catalog/tool-catalog.ts owns it. */
export interface ToolCatalogTable {
  instance_id: string;
  name: string;
  /** SHA-256 hex of the definition (toolFingerprint in @taskgate/reliability). */
  fingerprint: string;
  definition: JSONColumnType<Record<string, unknown>, string, string>;
  published_at: GeneratedTimestamp;
  /** The publishing worker's slots for the tool (migration 0027); null from an older worker. */
  concurrency: number | null;
}

/** A subscription a worker watches (migration 0013); packages/db/src/catalog/content-watches.ts owns it. */
export interface ContentWatchesTable {
  api_instance_id: string;
  tool: string;
  tenant_id: string;
  uri: string;
  changes: ColumnType<string, string | undefined, string>;
  created_at: GeneratedTimestamp;
}

/** Which worker runs a watch (migration 0014); packages/db/src/catalog/content-watches.ts owns it. */
export interface ContentWatchLeasesTable {
  tenant_id: string;
  uri: string;
  worker_id: string;
  expires_at: ColumnType<Date, Date | string, Date | string>;
}

/** A handshake-revision MCP session (migration 0008); packages/db/src/sessions/mcp-sessions.ts owns it. */
export interface ServerSecretsTable {
  name: string;
  secret: Buffer;
  created_at: GeneratedTimestamp;
}

export interface McpSessionsTable {
  id: string;
  tenant_id: string;
  revision: string;
  client_capabilities: JSONColumnType<Record<string, unknown>, string, string> | null;
  created_at: GeneratedTimestamp;
  last_seen_at: GeneratedTimestamp;
  log_level: string | null;
  resource_subscriptions: Generated<string[]>;
  /** Migration 0023: URL elicitations its client was sent in a -32042, newest last. */
  url_elicitations: Generated<string[]>;
}

/** A signed-in console session (migration 0024); packages/db/src/console-sessions/ owns it. */
export interface ConsoleSessionsTable {
  id_digest: Buffer;
  tenant_id: string;
  scopes: string[] | null;
  token_digest: string | null;
  csrf_token: string;
  created_at: GeneratedTimestamp;
  last_seen_at: GeneratedTimestamp;
  expires_at: Timestamp;
  ended_at: Timestamp | null;
  /** Opened with an operator token (migration 0028); then tenant_id is '*'. */
  operator: Generated<boolean>;
}

export interface Database {
  console_sessions: ConsoleSessionsTable;
  content_watch_leases: ContentWatchLeasesTable;
  content_watches: ContentWatchesTable;
  instances: InstancesTable;
  mcp_sessions: McpSessionsTable;
  server_secrets: ServerSecretsTable;
  tool_catalog: ToolCatalogTable;
  tasks: TasksTable;
  task_events: TaskEventsTable;
  taskgate_migrations: TaskgateMigrationsTable;
  idempotency_keys: IdempotencyKeysTable;
  task_steps: TaskStepsTable;
  task_log_messages: TaskLogMessagesTable;
  reconciliation_items: ReconciliationItemsTable;
  outbox: OutboxTable;
}
