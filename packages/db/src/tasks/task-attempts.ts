import { type Kysely, sql, type Transaction } from 'kysely';
import type { Database, TaskStatus } from '../schema.ts';
import { lostHolder } from './holder-liveness.ts';
import { type TaskRecord, type TaskRow, toTaskRecord } from './task-record.ts';
import type { TaskWriter } from './task-writer.ts';

/**
 * The worker's side of the tasks table. Every write after the claim is fenced by the attempt
 * number: a worker that was presumed dead (its job was handed to another worker) can no longer
 * change the task, even if it is still running. Each write reports what it changed to its writer.
 */

type Db = Kysely<Database> | Transaction<Database>;

export interface ClaimedAttempt {
  readonly task: TaskRecord;
  /** Time since the task first started (the max clock runs from there, across attempts). */
  readonly elapsedMs: number;
  /** The worker of an earlier attempt that ended without finishing or releasing the task. */
  readonly lostWorker: string | null;
}

export interface ClaimRule {
  /**
   * A task another worker holds is claimed only once that worker is lost (lostHolder): no live
   * instance row of it heartbeated within this many ms; null (the claimant has not watched the
   * database answer that long) never. A task this worker holds is never claimed again. Without a
   * rule, any working task is claimed (tests that play a worker presumed dead).
   */
  readonly holderLostAfterMs: number | null;
}

/**
 * Starts the next attempt of each working task: attempt + 1, this worker as holder, the deadlines,
 * an attempt_started event (and attempt_lost for a previous holder that vanished). Tasks that are
 * gone or no longer working are left out: there is nothing to run for them; so are, under `rule`,
 * tasks a live worker still holds (heldTasks tells them apart). One statement for any number of
 * tasks, so a worker can claim a whole fetched batch in the fetch's transaction.
 */
export async function claimAttempts(
  writer: TaskWriter,
  ids: readonly string[],
  workerId: string,
  rule?: ClaimRule,
): Promise<ClaimedAttempt[]> {
  if (ids.length === 0) return [];
  const free =
    rule === undefined
      ? sql``
      : sql`AND (worker_id IS NULL OR (worker_id <> ${workerId} AND ${lostHolder(rule.holderLostAfterMs)}))`;
  const { rows } = await sql<TaskRow & { lost_worker: string | null; previous_attempt: number; elapsed_ms: number }>`
    WITH current AS (
      SELECT id, worker_id AS lost_worker, attempt AS previous_attempt FROM tasks
      WHERE id = ANY(${[...ids]}::uuid[]) AND status = 'working' ${free} ORDER BY id FOR NO KEY UPDATE
    ), claimed AS (
      UPDATE tasks t SET
        attempt = t.attempt + 1,
        worker_id = ${workerId},
        heartbeat_at = now(),
        started_at = coalesce(t.started_at, now()),
        max_deadline_at = coalesce(t.max_deadline_at, now() + t.max_timeout_ms * interval '1 millisecond'),
        idle_deadline_at = now() + t.idle_timeout_ms * interval '1 millisecond'
      FROM current WHERE t.id = current.id
      RETURNING t.*, current.lost_worker, current.previous_attempt,
        (extract(epoch FROM now() - t.started_at) * 1000)::float8 AS elapsed_ms
    ), events AS (
      -- One INSERT, ordered: the history must read "attempt 1 lost" before "attempt 2 started"
      -- (two data-modifying CTEs would run in no defined order).
      INSERT INTO task_events (tenant_id, task_id, type, attempt, data)
      SELECT tenant_id, id, type, attempt, data FROM (
        SELECT id AS task, 1 AS ord, tenant_id, id, 'attempt_lost' AS type, previous_attempt AS attempt,
               json_build_object('worker', lost_worker)::jsonb AS data
        FROM claimed WHERE lost_worker IS NOT NULL
        UNION ALL
        SELECT id, 2, tenant_id, id, 'attempt_started', attempt, json_build_object('worker', worker_id)::jsonb FROM claimed
      ) ordered ORDER BY task, ord
    )
    SELECT * FROM claimed`.execute(writer.db);
  const claims = rows.map((row) => ({
    task: toTaskRecord(row),
    elapsedMs: Math.max(0, row.elapsed_ms),
    lostWorker: row.lost_worker,
  }));
  writer.changes.changed(
    'started',
    claims.map((claim) => claim.task),
  );
  return claims;
}

/** claimAttempts for one task; null when there is nothing to run (or, under `rule`, it is held). */
export async function claimAttempt(
  writer: TaskWriter,
  id: string,
  workerId: string,
  rule?: ClaimRule,
): Promise<ClaimedAttempt | null> {
  const [claim] = await claimAttempts(writer, [id], workerId, rule);
  return claim ?? null;
}

/**
 * The working tasks `workerId` holds that it is not running (not in `running`), claimed or last
 * progressed more than `quietForMs` ago — so that a claim just made in a fetch, whose run has not
 * started yet, is not among them. What a worker's own audit hands back: an attempt that ended
 * without its final write, or a previous process that used the same worker id.
 */
export async function strayAttempts(
  db: Db,
  workerId: string,
  running: readonly string[],
  quietForMs: number,
): Promise<{ readonly id: string; readonly attempt: number }[]> {
  const { rows } = await sql<{ id: string; attempt: number }>`
    SELECT id, attempt FROM tasks
    WHERE worker_id = ${workerId} AND status = 'working' AND NOT (id = ANY(${[...running]}::uuid[]))
      AND heartbeat_at < now() - ${quietForMs} * interval '1 millisecond'
    ORDER BY id LIMIT 1000`.execute(db);
  return rows;
}

/** Of `ids`, the tasks still working under a holder, with the worker that holds each. */
export async function heldTasks(db: Db, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<{ id: string; worker_id: string }>`
    SELECT id, worker_id FROM tasks
    WHERE id = ANY(${[...ids]}::uuid[]) AND status = 'working' AND worker_id IS NOT NULL`.execute(db);
  return new Map(rows.map((row) => [row.id, row.worker_id]));
}

export interface Outcome {
  readonly status: Extract<TaskStatus, 'completed' | 'failed' | 'cancelled'>;
  readonly result?: unknown;
  readonly error?: unknown;
  readonly statusMessage?: string;
  /** Why, for the history: "handler returned", "timeout:max", "cancel observed at checkpoint"... */
  readonly reason: string;
  /** The handler's last progress when no progress write stored it: it lands with the status. */
  readonly progress?: ProgressUpdate | undefined;
}

/**
 * SET clauses that store `progress` with a decided write, or keep the row's: the last progress a
 * handler reported must not be lost because its own write failed (an outage drops progress
 * writes; the terminal write is retried until it lands).
 */
function progressSet(progress: ProgressUpdate | undefined) {
  if (progress === undefined) return sql``;
  return sql`, progress_value = ${progress.value}, progress_total = ${progress.total ?? null},
        progress_message = ${progress.message ?? null}`;
}

/**
 * The single terminal transition: only if the task is still non-terminal and still on this
 * attempt. Null when something else got there first (a cancel, a timeout, a newer attempt).
 */
export async function finishAttempt(
  writer: TaskWriter,
  id: string,
  attempt: number,
  outcome: Outcome,
): Promise<TaskRecord | null> {
  const result = outcome.result === undefined ? null : JSON.stringify(outcome.result);
  const error = outcome.error === undefined ? null : JSON.stringify(outcome.error);
  const { rows } = await sql<TaskRow>`
    WITH current AS (
      SELECT id, status AS from_status FROM tasks
      WHERE id = ${id}::uuid AND attempt = ${attempt} AND status IN ('working', 'input_required')
      FOR NO KEY UPDATE
    ), finished AS (
      UPDATE tasks t SET
        status = ${outcome.status},
        status_message = ${outcome.statusMessage ?? null},
        result = ${result}::jsonb,
        error = ${error}::jsonb,
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL,
        input_requests = NULL
        ${progressSet(outcome.progress)}
      FROM current WHERE t.id = current.id
      RETURNING t.*, current.from_status
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', from_status, status, attempt, ${outcome.reason} FROM finished
    )
    SELECT finished.* FROM finished`.execute(writer.db);
  const finished = rows[0] ? toTaskRecord(rows[0]) : null;
  writer.changes.changed('status', [finished]);
  return finished;
}

/**
 * Parks a running task until its client answers: input_required with the outstanding requests, and
 * no worker (the attempt ends; the answer queues the next run). Fenced by the attempt, and refused
 * when a cancel was requested first (the attempt then ends cancelled instead). Null when refused.
 */
export async function parkForInput(
  writer: TaskWriter,
  id: string,
  attempt: number,
  requests: Readonly<Record<string, unknown>>,
  message: string,
  progress?: ProgressUpdate,
): Promise<TaskRecord | null> {
  const { rows } = await sql<TaskRow>`
    WITH current AS (
      SELECT id, status AS from_status FROM tasks
      WHERE id = ${id}::uuid AND attempt = ${attempt} AND status = 'working' AND cancel_requested_at IS NULL
      FOR NO KEY UPDATE
    ), parked AS (
      UPDATE tasks t SET
        status = 'input_required',
        status_message = ${message},
        input_requests = ${JSON.stringify(requests)}::jsonb,
        worker_id = NULL
        ${progressSet(progress)}
      FROM current WHERE t.id = current.id
      RETURNING t.*, current.from_status
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', from_status, status, attempt, ${message} FROM parked
    )
    SELECT parked.* FROM parked`.execute(writer.db);
  const parked = rows[0] ? toTaskRecord(rows[0]) : null;
  writer.changes.changed('status', [parked]);
  return parked;
}

export interface CompletionInput {
  readonly id: string;
  readonly attempt: number;
  readonly result: unknown;
  readonly reason: string;
  /** The last progress, when no progress write stored it (see Outcome.progress). */
  readonly progress?: ProgressUpdate | undefined;
}

/**
 * Completes tasks that have no local effects to commit, one statement for any number: for each,
 * the row lock, the cancel check and the terminal transition together (the final commit as last
 * checkpoint). Returns, in input order, the completed task or null where a cancel was requested
 * first or another attempt or a clock ended the task; the caller reads which.
 */
export async function completeAttempts(
  writer: TaskWriter,
  completions: readonly CompletionInput[],
): Promise<(TaskRecord | null)[]> {
  if (completions.length === 0) return [];
  const input = JSON.stringify(
    completions.map((completion) => ({
      id: completion.id,
      attempt: completion.attempt,
      result: completion.result ?? null,
      reason: completion.reason,
      ...(completion.progress === undefined
        ? {}
        : {
            progress: true,
            value: completion.progress.value,
            total: completion.progress.total ?? null,
            message: completion.progress.message ?? null,
          }),
    })),
  );
  const { rows } = await sql<TaskRow>`
    WITH input AS (
      SELECT * FROM jsonb_to_recordset(${input}::jsonb)
        AS x(id uuid, attempt int, result jsonb, reason text, progress boolean, value float8, total float8, message text)
    ), current AS (
      SELECT t.id, t.status AS from_status FROM tasks t JOIN input ON input.id = t.id
      WHERE t.attempt = input.attempt AND t.status IN ('working', 'input_required') AND t.cancel_requested_at IS NULL
      ORDER BY t.id FOR NO KEY UPDATE OF t
    ), finished AS (
      UPDATE tasks t SET
        status = 'completed',
        result = input.result,
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL,
        progress_value = CASE WHEN input.progress THEN input.value ELSE t.progress_value END,
        progress_total = CASE WHEN input.progress THEN input.total ELSE t.progress_total END,
        progress_message = CASE WHEN input.progress THEN input.message ELSE t.progress_message END
      FROM current JOIN input ON input.id = current.id
      WHERE t.id = current.id
      RETURNING t.*, current.from_status, input.reason
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', from_status, status, attempt, reason FROM finished ORDER BY id
    )
    SELECT finished.* FROM finished`.execute(writer.db);
  const byId = new Map(rows.map((row) => [row.id, toTaskRecord(row)]));
  writer.changes.changed('status', byId.values());
  return completions.map((completion) => byId.get(completion.id) ?? null);
}

export type CompletionCheck =
  | { readonly kind: 'proceed' }
  | { readonly kind: 'cancel-requested'; readonly reason: string | null }
  | { readonly kind: 'superseded'; readonly status: TaskStatus | null };

/**
 * The last checkpoint: locks the task row inside the completion transaction and says whether the
 * completion may commit. A cancel request that arrives after this lock waits for the commit and
 * then finds the task terminal.
 */
export async function lockForCompletion(
  trx: Transaction<Database>,
  id: string,
  attempt: number,
): Promise<CompletionCheck> {
  const { rows } = await sql<{
    status: TaskStatus;
    attempt: number;
    cancel_requested_at: Date | null;
    cancel_reason: string | null;
  }>`
    SELECT status, attempt, cancel_requested_at, cancel_reason FROM tasks WHERE id = ${id}::uuid FOR NO KEY UPDATE`.execute(
    trx,
  );
  const row = rows[0];
  if (!row || row.attempt !== attempt || (row.status !== 'working' && row.status !== 'input_required')) {
    return { kind: 'superseded', status: row?.status ?? null };
  }
  if (row.cancel_requested_at) return { kind: 'cancel-requested', reason: row.cancel_reason };
  return { kind: 'proceed' };
}

export interface CancelState {
  readonly id: string;
  readonly status: TaskStatus;
  readonly attempt: number;
  readonly cancelRequested: boolean;
  readonly cancelReason: string | null;
}

/** The cancel flags of the given tasks, read from the database (the fallback when NOTIFY is lost). */
export async function readCancelStates(db: Db, ids: readonly string[]): Promise<CancelState[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql<{
    id: string;
    status: TaskStatus;
    attempt: number;
    cancel_requested_at: Date | null;
    cancel_reason: string | null;
  }>`
    SELECT id, status, attempt, cancel_requested_at, cancel_reason FROM tasks WHERE id = ANY(${[...ids]}::uuid[])`.execute(
    db,
  );
  return rows.map((row) => ({
    id: row.id,
    status: row.status,
    attempt: row.attempt,
    cancelRequested: row.cancel_requested_at !== null,
    cancelReason: row.cancel_reason,
  }));
}

export interface ProgressUpdate {
  readonly value: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

/** Stores the latest progress and moves the idle deadline; false when the attempt no longer holds the task. */
export async function recordProgress(
  writer: TaskWriter,
  id: string,
  attempt: number,
  progress: ProgressUpdate,
): Promise<boolean> {
  const { rows } = await sql<{ id: string; tenant_id: string }>`
    UPDATE tasks SET
      progress_value = ${progress.value},
      progress_total = ${progress.total ?? null},
      progress_message = ${progress.message ?? null},
      heartbeat_at = now(),
      idle_deadline_at = now() + idle_timeout_ms * interval '1 millisecond'
    WHERE id = ${id}::uuid AND attempt = ${attempt} AND status = 'working'
    RETURNING id, tenant_id`.execute(writer.db);
  const written = { value: progress.value, total: progress.total ?? null, message: progress.message ?? null };
  writer.changes.changed(
    'progress',
    rows.map((row) => ({ id: row.id, tenantId: row.tenant_id, status: 'working' as const, progress: written })),
  );
  return rows.length > 0;
}

/** The worker saw the cancel request: its acknowledgement, recorded once per attempt. */
export async function recordCancelObserved(db: Db, id: string, attempt: number, how: string): Promise<void> {
  await sql`
    INSERT INTO task_events (tenant_id, task_id, type, attempt, reason)
    SELECT tenant_id, id, 'cancel_observed', attempt, ${how} FROM tasks
    WHERE id = ${id}::uuid AND attempt = ${attempt}
      AND NOT EXISTS (
        SELECT 1 FROM task_events WHERE task_id = ${id}::uuid AND type = 'cancel_observed' AND attempt = ${attempt}
      )`.execute(db);
}

/**
 * A worker shutting down hands the task back: it stays working, for the next attempt to pick up.
 * Refused (false) when a cancel was requested: the hand-back is a checkpoint, and a cancelled task
 * must not run again; the attempt ends it cancelled instead.
 */
export async function releaseAttempt(
  writer: TaskWriter,
  id: string,
  attempt: number,
  reason: string,
): Promise<boolean> {
  const { rows } = await sql<{ id: string; tenant_id: string; status: TaskStatus }>`
    WITH released AS (
      UPDATE tasks SET worker_id = NULL
      WHERE id = ${id}::uuid AND attempt = ${attempt} AND status IN ('working', 'input_required')
        AND cancel_requested_at IS NULL
      RETURNING tenant_id, id, attempt, status
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, attempt, reason)
      SELECT tenant_id, id, 'attempt_released', attempt, ${reason} FROM released
    )
    SELECT id, tenant_id, status FROM released`.execute(writer.db);
  writer.changes.changed(
    'released',
    rows.map((row) => ({ id: row.id, tenantId: row.tenant_id, status: row.status })),
  );
  return rows.length > 0;
}

/**
 * How many open tasks each of these workers holds now, across tenants (a count, no task of anyone's):
 * the concurrency in use the console's workers page shows. Reads tasks_worker_active_idx.
 */
export async function heldTaskCounts(db: Db, workerIds: readonly string[]): Promise<Map<string, number>> {
  if (workerIds.length === 0) return new Map();
  const { rows } = await sql<{ worker_id: string; held: number }>`
    SELECT worker_id, count(*)::int AS held FROM tasks
    WHERE worker_id = ANY(${[...workerIds]}::text[]) AND status IN ('working', 'input_required')
    GROUP BY worker_id`.execute(db);
  return new Map(rows.map((row) => [row.worker_id, row.held]));
}
