import type { CancelSignal } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';
import type { Database, TaskMode, TaskStatus } from '../schema.ts';
import { type TaskRecord, type TaskRow, toTaskRecord } from './task-record.ts';
import type { TaskWriter } from './task-writer.ts';

/**
 * The API's side of the tasks table and its history: create, read, list, request cancellation,
 * retention. Every state change appends to task_events in the same statement, so history can never
 * disagree with the row, and is reported to the writer's changes, which announce it once it has
 * committed.
 */

type Db = Kysely<Database>;

export interface NewTask {
  readonly tenantId: string;
  readonly tool: string;
  readonly arguments: unknown;
  readonly mode: TaskMode;
  readonly ttlMs: number;
  readonly pollIntervalMs: number;
  readonly idleTimeoutMs: number | null;
  readonly maxTimeoutMs: number | null;
  /** Chosen by the caller when the id must be known before the insert (an idempotency claim). */
  readonly id?: string;
  readonly idempotencyKey?: string | null;
  /** Answers gathered before the task existed (MCP input asked in the call), by request key. */
  readonly inputResponses?: Readonly<Record<string, unknown>>;
  /** A request-mode task: the API instance whose caller waits for it. */
  readonly apiInstanceId?: string | null;
  /** The fingerprint of the tool definition the call was checked against (version skew, 0007). */
  readonly toolFingerprint?: string | null;
  /** The level of ctx.log() messages the caller hears (they are kept for it); absent: none. */
  readonly logLevel?: string | null;
  /** What the MCP client declared on the call (migration 0015); absent: nothing. */
  readonly clientCapabilities?: Readonly<Record<string, unknown>> | null;
  /** The creating request's W3C traceparent (migration 0019): each attempt's span links to it. */
  readonly traceParent?: string | null;
}

/**
 * Inserts tasks and their `created` events, one statement for any number of them, in the given
 * order. Run it inside the transaction that enqueues their jobs.
 */
export async function insertTasks(writer: TaskWriter, tasks: readonly NewTask[]): Promise<TaskRecord[]> {
  if (tasks.length === 0) return [];
  const rows = JSON.stringify(
    tasks.map((task, ordinal) => ({
      ordinal,
      id: task.id ?? null,
      idempotency_key: task.idempotencyKey ?? null,
      tenant_id: task.tenantId,
      tool: task.tool,
      arguments: task.arguments ?? {},
      mode: task.mode,
      ttl_ms: task.ttlMs,
      poll_interval_ms: task.pollIntervalMs,
      idle_timeout_ms: task.idleTimeoutMs,
      max_timeout_ms: task.maxTimeoutMs,
      input_responses: task.inputResponses ?? {},
      api_instance_id: task.apiInstanceId ?? null,
      tool_fingerprint: task.toolFingerprint ?? null,
      log_level: task.logLevel ?? null,
      client_capabilities: task.clientCapabilities ?? null,
      trace_parent: task.traceParent ?? null,
    })),
  );
  const { rows: created } = await sql<TaskRow & { ordinal: number }>`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${rows}::jsonb) AS x(
        ordinal int, id uuid, idempotency_key text, tenant_id text, tool text, arguments jsonb, mode text,
        ttl_ms bigint, poll_interval_ms int, idle_timeout_ms int, max_timeout_ms int, input_responses jsonb,
        api_instance_id text, tool_fingerprint text, log_level text, client_capabilities jsonb, trace_parent text)
    ), ids AS (
      SELECT coalesce(input.id, gen_random_uuid()) AS task_id, input.* FROM input
    ), created AS (
      INSERT INTO tasks (id, tenant_id, tool, arguments, mode, ttl_ms, poll_interval_ms, idle_timeout_ms, max_timeout_ms,
                         idempotency_key, input_responses, api_instance_id, tool_fingerprint, log_level,
                         client_capabilities, trace_parent)
      SELECT task_id, tenant_id, tool, arguments, mode, ttl_ms, poll_interval_ms, idle_timeout_ms, max_timeout_ms,
             idempotency_key, input_responses, api_instance_id, tool_fingerprint, log_level, client_capabilities,
             trace_parent
      FROM ids ORDER BY ordinal
      RETURNING *
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, to_status)
      SELECT created.tenant_id, created.id, 'created', created.status
      FROM created JOIN ids ON ids.task_id = created.id ORDER BY ids.ordinal
    )
    SELECT created.*, ids.ordinal
    FROM created JOIN ids ON ids.task_id = created.id ORDER BY ids.ordinal`.execute(writer.db);
  const records = created.map(toTaskRecord);
  writer.changes.changed('created', records);
  return records;
}

/** The task if it exists for this tenant and has not expired; another tenant's task is null. */
export async function findTask(db: Db, tenantId: string, id: string): Promise<TaskRecord | null> {
  if (!isUuid(id)) return null;
  const { rows } = await sql<TaskRow>`
    SELECT * FROM tasks
    WHERE tenant_id = ${tenantId} AND id = ${id}::uuid AND (expires_at IS NULL OR expires_at > now())`.execute(db);
  return rows[0] ? toTaskRecord(rows[0]) : null;
}

/**
 * Many tasks by (tenant, id) in one statement, in the order asked (null for a missing, expired or
 * other tenant's task): concurrent readers share a round trip.
 */
export async function findTasks(
  db: Db,
  refs: readonly { readonly tenantId: string; readonly id: string }[],
): Promise<(TaskRecord | null)[]> {
  const wanted = refs.filter((ref) => isUuid(ref.id));
  if (wanted.length === 0) return refs.map(() => null);
  const { rows } = await sql<TaskRow>`
    SELECT t.* FROM tasks t
    JOIN unnest(${wanted.map((ref) => ref.tenantId)}::text[], ${wanted.map((ref) => ref.id)}::uuid[])
      AS wanted(tenant_id, id) ON t.tenant_id = wanted.tenant_id AND t.id = wanted.id
    WHERE t.expires_at IS NULL OR t.expires_at > now()`.execute(db);
  const found = new Map(rows.map((row) => [`${row.tenant_id}/${row.id}`, row]));
  return refs.map((ref) => {
    const row = found.get(`${ref.tenantId}/${ref.id.toLowerCase()}`);
    return row ? toTaskRecord(row) : null;
  });
}

export interface ListQuery {
  readonly status?: TaskStatus;
  readonly limit: number;
  readonly after?: TaskCursor;
  /** Only this tool's tasks (index tasks_tenant_tool_created_idx, migration 0025). */
  readonly tool?: string;
  /** Created at or after this instant. */
  readonly createdAfter?: Date;
  /** Created before this instant. */
  readonly createdBefore?: Date;
  /** The task with this id (at most one row). */
  readonly id?: string;
  /** The task an idempotency key names while the ledger remembers the key (its primary key). */
  readonly idempotencyKey?: string;
}

/** Keyset position: created_at exactly as Postgres prints it (microseconds intact), then id. */
export interface TaskCursor {
  readonly createdAt: string;
  readonly id: string;
}

export interface TaskPage {
  readonly tasks: TaskRecord[];
  readonly next: TaskCursor | null;
}

/** Newest first, `limit` at a time, continuing strictly after the cursor. */
export async function listTasks(db: Db, tenantId: string, query: ListQuery): Promise<TaskPage> {
  const { rows } = await listTasksStatement(tenantId, query).execute(db);
  const page = rows.slice(0, query.limit);
  const last = page.at(-1);
  return {
    tasks: page.map(toTaskRecord),
    next: rows.length > query.limit && last ? { createdAt: last.cursor_created_at, id: last.id } : null,
  };
}

/**
 * The statement listTasks runs, one row more than the page (that row says there is a next page):
 * apart so that a test can EXPLAIN exactly it (test/api/task-list-filters.test.ts asserts that
 * every filter is served by an index).
 */
export function listTasksStatement(tenantId: string, query: ListQuery) {
  const status = query.status ? sql`AND status = ${query.status}` : sql``;
  const tool = query.tool === undefined ? sql`` : sql`AND tool = ${query.tool}`;
  const createdAfter = query.createdAfter === undefined ? sql`` : sql`AND created_at >= ${query.createdAfter}`;
  const createdBefore = query.createdBefore === undefined ? sql`` : sql`AND created_at < ${query.createdBefore}`;
  const id = query.id === undefined ? sql`` : sql`AND id = ${query.id}::uuid`;
  // The key's task id from idempotency_keys' primary key (tenant_id, key): tasks.idempotency_key
  // has no index, and a search must not read millions of rows.
  const key =
    query.idempotencyKey === undefined
      ? sql``
      : sql`AND id = (SELECT task_id FROM idempotency_keys WHERE tenant_id = ${tenantId} AND key = ${query.idempotencyKey})`;
  const after = query.after
    ? sql`AND (created_at, id) < (${query.after.createdAt}::timestamptz, ${query.after.id}::uuid)`
    : sql``;
  return sql<TaskRow & { cursor_created_at: string }>`
    SELECT *, created_at::text AS cursor_created_at FROM tasks
    WHERE tenant_id = ${tenantId} ${status} ${tool} ${createdAfter} ${createdBefore} ${id} ${key} ${after}
      AND (expires_at IS NULL OR expires_at > now())
      -- The platform's own tasks (a remote resource read) are not the client's to list.
      AND tool NOT LIKE 'taskgate.%'
    ORDER BY created_at DESC, id DESC
    LIMIT ${query.limit + 1}`;
}

export interface CancelOutcome {
  /** null: no such task for this tenant. */
  readonly task: TaskRecord | null;
  /** true when this call recorded the request; false for a terminal task or a repeated request. */
  readonly recorded: boolean;
}

/**
 * Records the intent to cancel: cancel_requested_at and the reason, and a cancel_requested event,
 * in one statement; the `cancel` announcement wakes the worker holding the task. Not a terminal
 * transition: the task stays working until its worker observes the flag. A terminal task, or one
 * already asked, is returned unchanged (idempotent acknowledgement).
 */
export async function requestCancel(
  writer: TaskWriter,
  tenantId: string,
  id: string,
  reason: string | null,
  options: {
    readonly immediately?: boolean;
    /**
     * Only if the task's adoptions are still this many (adoptParkedRequest): the cancel of a
     * request that went away does not end a task a later retry has adopted since.
     */
    readonly adoptions?: number;
    /** Which path the cancel took; the first request's stays. */
    readonly signal?: CancelSignal;
  } = {},
): Promise<CancelOutcome> {
  if (!isUuid(id)) return { task: null, recorded: false };
  const now = options.immediately === true;
  const fence = options.adoptions ?? null;
  // A task parked in input_required has no worker to observe the flag, and `immediately` (the
  // 2025-11-25 tasks/cancel) wants the task cancelled before the answer: then the task ends
  // cancelled here, in the same statement, with the request and the transition in its history in
  // that order. A worker still running it stops at its next checkpoint and finds the task ended.
  const { rows } = await sql<TaskRow>`
    WITH current AS (
      SELECT id, status AS from_status, cancel_requested_at AS requested_before FROM tasks
      WHERE tenant_id = ${tenantId} AND id = ${id}::uuid
        AND status IN ('working', 'input_required') AND (cancel_requested_at IS NULL OR ${now})
        AND (expires_at IS NULL OR expires_at > now())
        AND (${fence}::int IS NULL OR adoptions = ${fence}::int)
      FOR NO KEY UPDATE
    ), requested AS (
      UPDATE tasks t SET
        cancel_requested_at = coalesce(t.cancel_requested_at, now()),
        cancel_reason = coalesce(t.cancel_reason, ${reason}),
        cancel_signal = CASE WHEN t.cancel_requested_at IS NULL THEN ${options.signal ?? 'other'}
                             ELSE t.cancel_signal END,
        status = CASE WHEN t.status = 'input_required' OR ${now} THEN 'cancelled' ELSE t.status END,
        status_message = CASE WHEN t.status = 'input_required' THEN 'cancelled while waiting for input'
                              WHEN ${now} THEN 'cancelled' ELSE t.status_message END,
        input_requests = CASE WHEN t.status = 'input_required' OR ${now} THEN NULL ELSE t.input_requests END,
        finished_at = CASE WHEN t.status = 'input_required' OR ${now} THEN now() ELSE t.finished_at END,
        expires_at = CASE WHEN t.status = 'input_required' OR ${now}
                          THEN now() + t.ttl_ms * interval '1 millisecond' ELSE t.expires_at END
      FROM current WHERE t.id = current.id
      RETURNING t.*, current.from_status, current.requested_before
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, type, from_status, to_status, attempt, reason FROM (
        SELECT 1 AS ord, tenant_id, id, 'cancel_requested' AS type, NULL::text AS from_status,
               NULL::text AS to_status, NULL::int AS attempt, cancel_reason AS reason
        FROM requested WHERE requested_before IS NULL
        UNION ALL
        SELECT 2, tenant_id, id, 'status_changed', from_status, status, attempt, status_message
        FROM requested WHERE status = 'cancelled'
      ) ordered ORDER BY ord
    )
    SELECT requested.* FROM requested`.execute(writer.db);
  if (rows[0]) {
    const task = toTaskRecord(rows[0]);
    writer.changes.changed('cancel', [task]);
    return { task, recorded: true };
  }
  // Read in a statement of its own: if this request waited on the row lock of a completion, only a
  // new snapshot sees the completed task (the UPDATE above re-checked its WHERE on the new version,
  // but a SELECT in the same statement would still see the old one).
  return { task: await findTask(writer.db, tenantId, id), recorded: false };
}

export interface AnsweredInput {
  /** null when the task does not exist for this tenant (or has expired). */
  readonly task: TaskRecord | null;
  /** Keys that were outstanding and are answered now; others were ignored. */
  readonly accepted: readonly string[];
  /** True when the last outstanding request was answered: the task is working again. */
  readonly resumed: boolean;
}

/**
 * Records answers to a parked task's input requests (tasks/update). Only keys still outstanding
 * count; the rest are ignored, as the Tasks extension asks. When nothing is outstanding any more the
 * task moves back to working, and the caller enqueues its next run, with the job id `nextJobId`,
 * in the same transaction. Runs in the caller's transaction; the row lock orders it with a
 * concurrent cancel or a second update.
 */
export async function answerInput(
  writer: TaskWriter,
  tenantId: string,
  id: string,
  responses: Readonly<Record<string, unknown>>,
  nextJobId: string,
): Promise<AnsweredInput> {
  const db = writer.db;
  if (!isUuid(id)) return { task: null, accepted: [], resumed: false };
  const { rows: locked } = await sql<TaskRow>`
    SELECT * FROM tasks WHERE tenant_id = ${tenantId} AND id = ${id}::uuid
      AND (expires_at IS NULL OR expires_at > now())
    FOR NO KEY UPDATE`.execute(db);
  const row = locked[0];
  if (!row) return { task: null, accepted: [], resumed: false };
  const outstanding = row.status === 'input_required' ? (row.input_requests ?? {}) : {};
  const accepted = Object.keys(responses).filter((key) => Object.hasOwn(outstanding, key));
  if (accepted.length === 0) return { task: toTaskRecord(row), accepted, resumed: false };
  const answers = Object.fromEntries(accepted.map((key) => [key, responses[key]]));
  const remaining = Object.fromEntries(Object.entries(outstanding).filter(([key]) => !accepted.includes(key)));
  const resumed = Object.keys(remaining).length === 0;
  const { rows } = await sql<TaskRow>`
    WITH updated AS (
      UPDATE tasks SET
        input_responses = input_responses || ${JSON.stringify(answers)}::jsonb,
        input_requests = ${resumed ? null : JSON.stringify(remaining)}::jsonb,
        status = ${resumed ? 'working' : 'input_required'},
        status_message = ${resumed ? 'input received; resuming' : row.status_message},
        job_id = ${resumed ? nextJobId : row.job_id}::uuid
      WHERE id = ${id}::uuid
      RETURNING *
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', 'input_required', 'working', attempt, 'input received'
      FROM updated WHERE status = 'working'
    )
    SELECT updated.* FROM updated`.execute(db);
  const task = toTaskRecord(rows[0] as TaskRow);
  writer.changes.changed(resumed ? 'resumed' : 'status', [task]);
  return { task, accepted, resumed };
}

export interface TaskEvent {
  readonly id: number;
  readonly type: string;
  readonly fromStatus: TaskStatus | null;
  readonly toStatus: TaskStatus | null;
  readonly attempt: number | null;
  readonly reason: string | null;
  readonly data: unknown;
  readonly createdAt: Date;
}

/** A task's history, oldest first (the durable cancellation trace). */
export async function listTaskEvents(db: Db, tenantId: string, taskId: string): Promise<TaskEvent[]> {
  if (!isUuid(taskId)) return [];
  const rows = await db
    .selectFrom('task_events')
    .select(['id', 'type', 'from_status', 'to_status', 'attempt', 'reason', 'data', 'created_at'])
    .where('tenant_id', '=', tenantId)
    .where('task_id', '=', taskId)
    .orderBy('id')
    .execute();
  return rows.map((row) => ({
    id: Number(row.id),
    type: row.type,
    fromStatus: row.from_status,
    toStatus: row.to_status,
    attempt: row.attempt,
    reason: row.reason,
    data: row.data,
    createdAt: row.created_at,
  }));
}

/**
 * Retention: deletes up to `limit` tasks whose expiry has passed (their history goes with them).
 * SKIP LOCKED lets several workers sweep at once without waiting on each other. Not announced: an
 * expired task already reads as not found, so a watcher's next read tells it as much.
 */
export async function deleteExpiredTasks(db: Db, limit: number): Promise<number> {
  const result = await sql`
    DELETE FROM tasks WHERE id IN (
      SELECT id FROM tasks WHERE expires_at <= now() ORDER BY expires_at LIMIT ${limit} FOR UPDATE SKIP LOCKED
    )`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A malformed id can name no task; checking here keeps Postgres from raising on the cast. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
