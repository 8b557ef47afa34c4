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

export interface Database {
  tasks: TasksTable;
  task_events: TaskEventsTable;
  taskgate_migrations: TaskgateMigrationsTable;
}
