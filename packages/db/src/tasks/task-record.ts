import type { TaskMode, TaskStatus } from '../schema.ts';

/** A task as the rest of Taskgate sees it: camelCase, numbers for bigints, progress grouped. */
export interface TaskRecord {
  readonly id: string;
  readonly tenantId: string;
  readonly tool: string;
  readonly arguments: unknown;
  readonly status: TaskStatus;
  readonly statusMessage: string | null;
  readonly result: unknown;
  readonly error: unknown;
  readonly mode: TaskMode;
  readonly cancelRequestedAt: Date | null;
  readonly cancelReason: string | null;
  readonly progress: TaskProgress | null;
  readonly attempt: number;
  readonly workerId: string | null;
  readonly idleTimeoutMs: number | null;
  readonly maxTimeoutMs: number | null;
  readonly ttlMs: number | null;
  readonly pollIntervalMs: number | null;
  readonly createdAt: Date;
  readonly lastUpdatedAt: Date;
  readonly startedAt: Date | null;
  readonly finishedAt: Date | null;
  readonly expiresAt: Date | null;
  /** The idempotency key the task holds in the ledger, if it was created with one. */
  readonly idempotencyKey: string | null;
  /** What the task waits for while input_required (MCP input requests by key); null otherwise. */
  readonly inputRequests: Readonly<Record<string, unknown>> | null;
  /** Every answer the task has received, by request key. */
  readonly inputResponses: Readonly<Record<string, unknown>>;
  /** For a request-mode task, the API instance whose caller waits for it. */
  readonly apiInstanceId: string | null;
  /** toolFingerprint of the definition the API accepted the call under; null before migration 0007. */
  readonly toolFingerprint: string | null;
  /** The log level the calling request asked for (its ctx.log() messages are kept); null: none (0012). */
  readonly logLevel: string | null;
  /** How many ctx.log() messages the task has kept (task_log_messages). */
  readonly logCount: number;
  /** What the MCP client declared on the call that created it (migration 0015); absent: nothing. */
  readonly clientCapabilities?: Readonly<Record<string, unknown>>;
  /** The creating request's W3C traceparent (migration 0019), when it is known. */
  readonly traceParent?: string;
}

export interface TaskProgress {
  readonly value: number;
  readonly total: number | null;
  readonly message: string | null;
}

/** The row as pg returns it for `SELECT tasks.*`. */
export interface TaskRow {
  id: string;
  tenant_id: string;
  tool: string;
  arguments: unknown;
  status: TaskStatus;
  status_message: string | null;
  result: unknown;
  error: unknown;
  mode: TaskMode;
  cancel_requested_at: Date | null;
  cancel_reason: string | null;
  progress_value: number | null;
  progress_total: number | null;
  progress_message: string | null;
  attempt: number;
  worker_id: string | null;
  idle_timeout_ms: number | null;
  max_timeout_ms: number | null;
  ttl_ms: string | number | null;
  poll_interval_ms: number | null;
  created_at: Date;
  last_updated_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
  expires_at: Date | null;
  idempotency_key: string | null;
  input_requests: Record<string, unknown> | null;
  input_responses: Record<string, unknown> | null;
  job_id: string | null;
  api_instance_id: string | null;
  tool_fingerprint: string | null;
  log_level?: string | null;
  log_count?: number;
  client_capabilities?: Record<string, unknown> | null;
  trace_parent?: string | null;
}

export function toTaskRecord(row: TaskRow): TaskRecord {
  return {
    id: row.id,
    tenantId: row.tenant_id,
    tool: row.tool,
    arguments: row.arguments,
    status: row.status,
    statusMessage: row.status_message,
    result: row.result,
    error: row.error,
    mode: row.mode,
    cancelRequestedAt: row.cancel_requested_at,
    cancelReason: row.cancel_reason,
    progress:
      row.progress_value === null
        ? null
        : { value: row.progress_value, total: row.progress_total, message: row.progress_message },
    attempt: row.attempt,
    workerId: row.worker_id,
    idleTimeoutMs: row.idle_timeout_ms,
    maxTimeoutMs: row.max_timeout_ms,
    ttlMs: row.ttl_ms === null ? null : Number(row.ttl_ms),
    pollIntervalMs: row.poll_interval_ms,
    createdAt: row.created_at,
    lastUpdatedAt: row.last_updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    expiresAt: row.expires_at,
    idempotencyKey: row.idempotency_key ?? null,
    inputRequests: row.input_requests ?? null,
    inputResponses: row.input_responses ?? {},
    apiInstanceId: row.api_instance_id ?? null,
    toolFingerprint: row.tool_fingerprint ?? null,
    logLevel: row.log_level ?? null,
    logCount: row.log_count ?? 0,
    ...(row.client_capabilities ? { clientCapabilities: row.client_capabilities } : {}),
    ...(row.trace_parent ? { traceParent: row.trace_parent } : {}),
  };
}

/** The channel every task change is announced on; the payload is a TaskNotification as JSON. */
export const TASK_CHANNEL = 'taskgate_task';

export interface TaskNotification {
  readonly id: string;
  readonly tenant: string;
  /**
   * `resumed`: a parked task's input was answered and its next run enqueued (status working).
   * `started`: a worker claimed an attempt; `released`: a worker handed the task back. Neither
   * changes the status, nor does `progress`, nor `log` (new ctx.log() messages, migration 0012).
   */
  readonly event: 'created' | 'started' | 'status' | 'progress' | 'log' | 'cancel' | 'resumed' | 'released';
  readonly status: TaskStatus;
  /** The task's tool, on `created` and `resumed` (new work for that tool's queue); absent otherwise. */
  readonly tool?: string;
  /**
   * On `progress`: the value written. Absent when it would not fit a payload (a long message):
   * a listener then reads the row.
   */
  readonly progress?: TaskProgress;
}

export function parseTaskNotification(payload: string | undefined): TaskNotification | null {
  if (!payload) return null;
  try {
    const value = JSON.parse(payload) as Partial<TaskNotification>;
    if (typeof value.id !== 'string' || typeof value.event !== 'string') return null;
    // Anyone who may NOTIFY could send this: a progress that is not one is not passed on.
    if (value.progress !== undefined && !isProgress(value.progress)) {
      const { progress: _dropped, ...rest } = value;
      return rest as TaskNotification;
    }
    return value as TaskNotification;
  } catch {
    return null;
  }
}

function isProgress(value: unknown): value is TaskProgress {
  if (typeof value !== 'object' || value === null) return false;
  const { value: at, total, message } = value as Record<string, unknown>;
  return (
    typeof at === 'number' &&
    Number.isFinite(at) &&
    (total === null || (typeof total === 'number' && Number.isFinite(total))) &&
    (message === null || typeof message === 'string')
  );
}
