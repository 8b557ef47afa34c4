import { type Kysely, sql } from 'kysely';
import type { Database, TaskEventType, TaskStatus } from '../schema.ts';

/**
 * What the console's task page shows beside the task itself: its events (task_events, written by
 * the task store, the attempts and the sweeps), its clocks and the trace it was created under,
 * and its durable steps. Reads only, each tenant-scoped through the task's own row.
 */

type Db = Kysely<Database>;

export interface TaskEventRecord {
  /** Increasing per database: the page's cursor. */
  readonly id: string;
  readonly type: TaskEventType;
  readonly fromStatus: TaskStatus | null;
  readonly toStatus: TaskStatus | null;
  readonly attempt: number | null;
  readonly reason: string | null;
  readonly data: unknown;
  readonly at: Date;
}

/** The task's events after `afterId` (a decimal string, '0' from the start), oldest first. */
export async function readTaskEvents(
  db: Db,
  input: { readonly tenantId: string; readonly taskId: string; readonly afterId: string; readonly limit: number },
): Promise<TaskEventRecord[]> {
  const { rows } = await sql<{
    id: string;
    type: TaskEventType;
    from_status: TaskStatus | null;
    to_status: TaskStatus | null;
    attempt: number | null;
    reason: string | null;
    data: unknown;
    created_at: Date;
  }>`
    SELECT id::text AS id, type, from_status, to_status, attempt, reason, data, created_at
    FROM task_events
    WHERE task_id = ${input.taskId}::uuid AND tenant_id = ${input.tenantId} AND id > ${input.afterId}::bigint
    ORDER BY id
    LIMIT ${input.limit}`.execute(db);
  return rows.map((row) => ({
    id: row.id,
    type: row.type,
    fromStatus: row.from_status,
    toStatus: row.to_status,
    attempt: row.attempt,
    reason: row.reason,
    data: row.data,
    at: row.created_at,
  }));
}

export interface TaskClocks {
  readonly idleTimeoutMs: number | null;
  readonly maxTimeoutMs: number | null;
  readonly idleDeadlineAt: Date | null;
  readonly maxDeadlineAt: Date | null;
  /** While input_required: when the parked task gives up waiting for its answer. */
  readonly inputDeadlineAt: Date | null;
  /** The database's clock when this was read: what "how much is left" is measured against. */
  readonly now: Date;
  readonly cancelSignal: string | null;
  readonly traceParent: string | null;
  readonly workerId: string | null;
  readonly heartbeatAt: Date | null;
  readonly toolFingerprint: string | null;
}

/** The task's clocks, trace and holder, or null (no such task for this tenant). */
export async function readTaskClocks(db: Db, tenantId: string, taskId: string): Promise<TaskClocks | null> {
  const { rows } = await sql<{
    idle_timeout_ms: number | null;
    max_timeout_ms: number | null;
    idle_deadline_at: Date | null;
    max_deadline_at: Date | null;
    input_deadline_at: Date | null;
    now: Date;
    cancel_signal: string | null;
    trace_parent: string | null;
    worker_id: string | null;
    heartbeat_at: Date | null;
    tool_fingerprint: string | null;
  }>`
    SELECT idle_timeout_ms, max_timeout_ms, idle_deadline_at, max_deadline_at, input_deadline_at, now() AS now,
           cancel_signal, trace_parent, worker_id, heartbeat_at, tool_fingerprint
    FROM tasks
    WHERE tenant_id = ${tenantId} AND id = ${taskId}::uuid AND (expires_at IS NULL OR expires_at > now())`.execute(db);
  const row = rows[0];
  if (row === undefined) return null;
  return {
    idleTimeoutMs: row.idle_timeout_ms,
    maxTimeoutMs: row.max_timeout_ms,
    idleDeadlineAt: row.idle_deadline_at,
    maxDeadlineAt: row.max_deadline_at,
    inputDeadlineAt: row.input_deadline_at,
    now: row.now,
    cancelSignal: row.cancel_signal,
    traceParent: row.trace_parent,
    workerId: row.worker_id,
    heartbeatAt: row.heartbeat_at,
    toolFingerprint: row.tool_fingerprint,
  };
}

export interface TaskStepRecord {
  readonly name: string;
  readonly state: 'started' | 'done';
  readonly irreversible: boolean;
  readonly attempt: number;
  readonly result: unknown;
  readonly at: Date;
}

/** The task's durable steps in the order they were recorded; at most `limit`. */
export async function readTaskSteps(
  db: Db,
  tenantId: string,
  taskId: string,
  limit: number,
): Promise<TaskStepRecord[]> {
  const { rows } = await sql<{
    name: string;
    state: 'started' | 'done';
    irreversible: boolean;
    attempt: number;
    result: unknown;
    created_at: Date;
  }>`
    SELECT name, state, irreversible, attempt, result, created_at FROM task_steps
    WHERE task_id = ${taskId}::uuid AND tenant_id = ${tenantId}
    ORDER BY created_at, name
    LIMIT ${limit}`.execute(db);
  return rows.map((row) => ({
    name: row.name,
    state: row.state,
    irreversible: row.irreversible,
    attempt: row.attempt,
    result: row.result,
    at: row.created_at,
  }));
}
