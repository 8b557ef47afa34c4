import { sql } from 'kysely';
import { PGBOSS_SCHEMA } from '../migrations/pgboss-schema.ts';
import { LEGACY_TASK_QUEUE, TOOL_QUEUE_PREFIX } from '../task-queue.ts';
import { lostHolder } from './holder-liveness.ts';
import { type TaskRecord, type TaskRow, toTaskRecord } from './task-record.ts';
import type { TaskWriter } from './task-writer.ts';

/**
 * The statements that end tasks nobody else will end. Each one picks its tasks with
 * FOR NO KEY UPDATE SKIP LOCKED, re-checks its condition on the locked row, and writes the terminal
 * status with its `status_changed` event naming why, in one statement: any number of processes may
 * sweep at once, a task another transaction holds (a worker's final commit, a cancel) is left for
 * the next sweep, and a task ends once whoever gets there first. Every sweep reports what it ended
 * to the writer (TaskAnnouncer), so the callers waiting on those tasks hear of it.
 */

/** JSON-RPC code of a task that ran out of time (the same as the worker's own clocks). */
const REQUEST_TIMEOUT = -32001;
/** JSON-RPC code of a task the platform gave up on (its delivery ended without it). */
const INTERNAL_ERROR = -32603;

const pgboss = sql.id(PGBOSS_SCHEMA);

/**
 * Where a task's job can be: its tool's queue, or (left there by an upgrade until a worker forwards
 * it) the single queue of before. `t` is the task row; the id is the job's, unique per queue.
 */
const jobOfTask = (job: string) =>
  sql`${sql.ref(`${job}.name`)} IN (${TOOL_QUEUE_PREFIX} || t.tool, ${LEGACY_TASK_QUEUE})
      AND ${sql.ref(`${job}.id`)} = coalesce(t.job_id, t.id)`;

/**
 * The task queues as an array of names, for an index probe per queue on pg-boss's
 * (name, completed_on) index: a LIKE on the prefix could not use it under a non-C collation.
 */
const taskQueues = sql`ARRAY(SELECT q.name FROM ${pgboss}.queue q
  WHERE q.name = ${LEGACY_TASK_QUEUE} OR starts_with(q.name, ${TOOL_QUEUE_PREFIX}))`;

/**
 * Tasks whose max clock ran out more than `graceMs` ago, still open, that no live worker holds:
 * they wait in the queue or for input past it, or their worker is gone (dead, partitioned: silent
 * for `lostAfterMs`; null when the caller may not judge loss yet, and then only unheld tasks).
 * Failed, naming the clock. A live worker's task is its own: it ends it at its deadline itself,
 * unless the handler returned first, and then its completion stands, however long the write took
 * (an outage, a lock): a sweep must not fail work that succeeded.
 */
export async function failPastMaxDeadline(
  writer: TaskWriter,
  graceMs: number,
  lostAfterMs: number | null,
  limit: number,
): Promise<TaskRecord[]> {
  const { rows } = await sql<TaskRow>`
    WITH due AS (
      SELECT id, status AS from_status FROM tasks
      WHERE status IN ('working', 'input_required') AND max_deadline_at IS NOT NULL
        AND max_deadline_at <= now() - ${graceMs} * interval '1 millisecond'
        AND (worker_id IS NULL OR ${lostHolder(lostAfterMs)})
      ORDER BY max_deadline_at LIMIT ${limit}
      FOR NO KEY UPDATE SKIP LOCKED
    ), ended AS (
      UPDATE tasks t SET
        status = 'failed',
        status_message = format('maximum timeout: the task ran for its limit of %s ms', t.max_timeout_ms),
        error = jsonb_build_object(
          'code', ${REQUEST_TIMEOUT}::int,
          'message', format('maximum timeout: the task ran for its limit of %s ms', t.max_timeout_ms),
          'data', jsonb_build_object('clock', 'max', 'limitMs', t.max_timeout_ms)),
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL,
        input_requests = NULL
      FROM due WHERE t.id = due.id
      RETURNING t.*, due.from_status
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', from_status, status, attempt,
             'timeout:max (swept: nobody ended it at its deadline)'
      FROM ended ORDER BY id
    )
    SELECT * FROM ended`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * Tasks no worker has started within `maxQueueMs` of their creation (TASKGATE_MAX_QUEUE_MS): no
 * worker serves the tool, or none is running. Failed with a message naming the tool, so the caller
 * waiting on the task learns why. A task asked to cancel is left to cancelUnheld, which ends it
 * cancelled instead.
 */
export async function failQueuedTooLong(writer: TaskWriter, maxQueueMs: number, limit: number): Promise<TaskRecord[]> {
  const { rows } = await sql<TaskRow>`
    WITH due AS (
      SELECT id FROM tasks
      WHERE status = 'working' AND started_at IS NULL AND cancel_requested_at IS NULL
        AND created_at <= now() - ${maxQueueMs} * interval '1 millisecond'
      ORDER BY created_at LIMIT ${limit}
      FOR NO KEY UPDATE SKIP LOCKED
    ), ended AS (
      UPDATE tasks t SET
        status = 'failed',
        status_message = format('no worker started %s within %s ms (TASKGATE_MAX_QUEUE_MS); is a worker serving it running?',
                                t.tool, ${maxQueueMs}::bigint),
        error = jsonb_build_object(
          'code', ${REQUEST_TIMEOUT}::int,
          'message', format('no worker started %s within %s ms (TASKGATE_MAX_QUEUE_MS); is a worker serving it running?',
                            t.tool, ${maxQueueMs}::bigint),
          'data', jsonb_build_object('clock', 'queue', 'limitMs', ${maxQueueMs}::bigint, 'tool', t.tool)),
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond'
      FROM due WHERE t.id = due.id
      RETURNING t.*
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, 'status_changed', 'working', status, attempt, 'timeout:queue (swept: no worker started it)'
      FROM ended ORDER BY id
    )
    SELECT * FROM ended`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * Tasks asked to cancel that nobody is running: no worker holds them (queued, or handed back), or
 * — when `lostAfterMs` is given — the worker that holds them has not heartbeated for that long.
 * Nobody would reach a checkpoint, so they end cancelled now. A live worker's task is left alone:
 * its checkpoint is the cancel's way in.
 */
export async function cancelUnheld(
  writer: TaskWriter,
  lostAfterMs: number | null,
  limit: number,
): Promise<TaskRecord[]> {
  const lostWorker = lostHolder(lostAfterMs);
  const { rows } = await sql<TaskRow & { held_by: string | null }>`
    WITH due AS (
      SELECT id, worker_id AS held_by FROM tasks
      WHERE status = 'working' AND cancel_requested_at IS NOT NULL AND (worker_id IS NULL OR ${lostWorker})
      ORDER BY cancel_requested_at LIMIT ${limit}
      FOR NO KEY UPDATE SKIP LOCKED
    ), ended AS (
      UPDATE tasks t SET
        status = 'cancelled',
        status_message = CASE WHEN due.held_by IS NULL THEN 'cancelled before a worker ran it'
                              ELSE 'cancelled; the worker running it was lost' END,
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL
      FROM due WHERE t.id = due.id
      RETURNING t.*, due.held_by
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason, data)
      SELECT tenant_id, id, 'status_changed', 'working', status, attempt,
             CASE WHEN held_by IS NULL THEN 'cancel requested; no worker held the task (swept)'
                  ELSE 'cancel requested; the worker holding the task was lost (swept)' END,
             CASE WHEN held_by IS NULL THEN NULL ELSE jsonb_build_object('worker', held_by) END
      FROM ended ORDER BY id
    )
    SELECT * FROM ended`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * Working tasks whose pg-boss job ended (failed after its retries, cancelled, or completed) within
 * the last `lookbackMs` without the task ending: no worker will run them again. The retries ran
 * out when workers kept dying or handing the task back (a rolling deploy that SIGTERMs the holder
 * each time). Failed, naming the attempts. Found from the jobs that ended recently (pg-boss's
 * (name, completed_on) index), so a sweep costs what ended since the last one.
 */
export async function failOrphanedByEndedJobs(
  writer: TaskWriter,
  lookbackMs: number,
  lostAfterMs: number | null,
  limit: number,
): Promise<TaskRecord[]> {
  // A job forwarded from the legacy queue is deleted there, never ended, so an ended job of the
  // task in either queue means its delivery is over; the NOT EXISTS only guards the moment of an
  // upgrade, when one old worker might still end a legacy job another already forwarded.
  const { rows } = await sql<TaskRow>`
    WITH ended_jobs AS (
      SELECT j.name AS job_queue, j.id AS job_id, j.state::text AS job_state, j.retry_limit,
             CASE WHEN j.data->>'taskId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                  THEN (j.data->>'taskId')::uuid END AS task_id
      FROM ${pgboss}.job j
      WHERE j.name = ANY(${taskQueues}) AND j.completed_on >= now() - ${lookbackMs} * interval '1 millisecond'
        AND j.state IN ('failed', 'cancelled', 'completed')
    ), due AS (
      SELECT t.id, e.job_state, e.retry_limit FROM tasks t JOIN ended_jobs e ON t.id = e.task_id
      WHERE coalesce(t.job_id, t.id) = e.job_id AND t.status = 'working'
        AND (t.worker_id IS NULL OR ${lostHolder(lostAfterMs, 't')})
        AND e.job_queue IN (${TOOL_QUEUE_PREFIX} || t.tool, ${LEGACY_TASK_QUEUE})
        AND NOT EXISTS (
          SELECT 1 FROM ${pgboss}.job l WHERE ${jobOfTask('l')} AND l.state IN ('created', 'retry', 'active'))
      ORDER BY t.id LIMIT ${limit}
      FOR NO KEY UPDATE OF t SKIP LOCKED
    )
    ${failGivenUp('due')}`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * Working tasks with no live job at all (none created, waiting, retrying or active): its job ended
 * longer ago than failOrphanedByEndedJobs looks, or was deleted. A full pass over the open tasks,
 * so it runs rarely; the recent-jobs sweep finds the usual case sooner.
 */
export async function failWithoutLiveJob(
  writer: TaskWriter,
  lostAfterMs: number | null,
  limit: number,
): Promise<TaskRecord[]> {
  // The task's job in its tool's queue or the legacy one, a live one first: only a task none of
  // whose jobs is live is given up, and the state named is that of the job it had.
  const { rows } = await sql<TaskRow>`
    WITH due AS (
      SELECT t.id, coalesce(j.state::text, 'missing') AS job_state, j.retry_limit FROM tasks t
      LEFT JOIN LATERAL (
        SELECT j.state, j.retry_limit FROM ${pgboss}.job j WHERE ${jobOfTask('j')}
        ORDER BY j.state IN ('created', 'retry', 'active') DESC LIMIT 1
      ) j ON true
      WHERE t.status = 'working' AND (j.state IS NULL OR j.state NOT IN ('created', 'retry', 'active'))
        AND (t.worker_id IS NULL OR ${lostHolder(lostAfterMs, 't')})
      ORDER BY t.id LIMIT ${limit}
      FOR NO KEY UPDATE OF t SKIP LOCKED
    )
    ${failGivenUp('due')}`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * The terminal write of a task whose delivery ended: `due` has the task's id, the job's state and
 * its retry limit. The row is re-checked under its lock (still working).
 */
function failGivenUp(due: string) {
  const message = sql`format(
    'the queue gave up on the task after %s attempt(s): its job is %s%s; no worker will run it again',
    t.attempt, d.job_state,
    CASE WHEN d.job_state = 'failed' THEN format(' (retry limit %s reached)', d.retry_limit) ELSE '' END)`;
  return sql`, ended AS (
      UPDATE tasks t SET
        status = 'failed',
        status_message = ${message},
        error = jsonb_build_object('code', ${INTERNAL_ERROR}::int, 'message', ${message},
          'data', jsonb_build_object('attempts', t.attempt, 'jobState', d.job_state)),
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL
      FROM ${sql.table(due)} d WHERE t.id = d.id AND t.status = 'working'
      RETURNING t.*, d.job_state
    ), event AS (
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason, data)
      SELECT tenant_id, id, 'status_changed', 'working', status, attempt, 'job ' || job_state || ' (swept)',
             jsonb_build_object('jobState', job_state)
      FROM ended ORDER BY id
    )
    SELECT * FROM ended`;
}

/**
 * Request-mode tasks whose API instance — the only place their caller can be answered — stopped
 * gracefully or has not heartbeated for `lostAfterMs`: cancelled with the reason "the request's API
 * instance was lost", like a closed stream. One a worker runs keeps running until that worker's next
 * checkpoint sees the flag (the `cancel` announcement wakes it); one nobody runs (queued, or waiting
 * for input) ends cancelled now. Tasks handed to their client as durable tasks are mode `task` and
 * are never touched.
 */
export async function cancelOrphanedRequests(
  writer: TaskWriter,
  lostAfterMs: number,
  limit: number,
): Promise<TaskRecord[]> {
  const reason = "the request's API instance was lost";
  const { rows } = await sql<TaskRow & { from_status: string; requested_before: Date | null }>`
    WITH due AS (
      SELECT t.id, t.status AS from_status, t.cancel_requested_at AS requested_before FROM tasks t
      WHERE t.mode = 'request' AND t.status IN ('working', 'input_required') AND t.api_instance_id IS NOT NULL
        AND NOT EXISTS (
          SELECT 1 FROM instances i WHERE i.id = t.api_instance_id AND i.stopped_at IS NULL
            AND i.heartbeat_at > now() - ${lostAfterMs} * interval '1 millisecond')
        AND (t.cancel_requested_at IS NULL OR t.worker_id IS NULL OR t.status = 'input_required')
      ORDER BY t.id LIMIT ${limit}
      FOR NO KEY UPDATE OF t SKIP LOCKED
    ), cancelled AS (
      UPDATE tasks t SET
        cancel_requested_at = coalesce(t.cancel_requested_at, now()),
        cancel_reason = coalesce(t.cancel_reason, ${reason}),
        status = CASE WHEN t.worker_id IS NULL OR t.status = 'input_required' THEN 'cancelled' ELSE t.status END,
        status_message = CASE WHEN t.worker_id IS NULL OR t.status = 'input_required'
                              THEN 'cancelled: ' || ${reason} ELSE t.status_message END,
        input_requests = CASE WHEN t.worker_id IS NULL OR t.status = 'input_required' THEN NULL ELSE t.input_requests END,
        finished_at = CASE WHEN t.worker_id IS NULL OR t.status = 'input_required' THEN now() ELSE t.finished_at END,
        expires_at = CASE WHEN t.worker_id IS NULL OR t.status = 'input_required'
                          THEN now() + t.ttl_ms * interval '1 millisecond' ELSE t.expires_at END
      FROM due WHERE t.id = due.id
      RETURNING t.*, due.from_status, due.requested_before
    ), event AS (${sweptCancelEvents('cancelled', reason)})
    SELECT * FROM cancelled`.execute(writer.db);
  return reported(writer, 'cancel', rows);
}

/**
 * Request-mode tasks parked for input whose request ended input_required and that no retry took up
 * by their input deadline (packages/db/src/tasks/parked-requests.ts): the client abandoned the
 * call, and its request state has expired, so no retry could answer them now. Cancelled, saying
 * so. A retry adopts its task before waiting on it, which clears the deadline.
 */
export async function cancelAbandonedInput(writer: TaskWriter, limit: number): Promise<TaskRecord[]> {
  const reason = 'nobody answered its input in time: the client did not retry the request';
  const { rows } = await sql<TaskRow & { requested_before: Date | null }>`
    WITH due AS (
      SELECT id, cancel_requested_at AS requested_before FROM tasks
      WHERE status = 'input_required' AND input_deadline_at IS NOT NULL AND input_deadline_at <= now()
      ORDER BY input_deadline_at LIMIT ${limit}
      FOR NO KEY UPDATE SKIP LOCKED
    ), ended AS (
      UPDATE tasks t SET
        status = 'cancelled',
        status_message = 'cancelled: ' || ${reason},
        cancel_requested_at = coalesce(t.cancel_requested_at, now()),
        cancel_reason = coalesce(t.cancel_reason, ${reason}),
        input_requests = NULL,
        input_deadline_at = NULL,
        finished_at = now(),
        expires_at = now() + t.ttl_ms * interval '1 millisecond',
        worker_id = NULL
      FROM due WHERE t.id = due.id AND t.status = 'input_required'
      RETURNING t.*, 'input_required'::text AS from_status, due.requested_before
    ), event AS (${sweptCancelEvents('ended', reason)})
    SELECT * FROM ended`.execute(writer.db);
  return reported(writer, 'status', rows);
}

/**
 * The task_events of a swept cancel, from the CTE `rows` (tasks with from_status and
 * requested_before): as every cancel's history reads, the request (unless one was recorded
 * before), then the status change of those that ended cancelled.
 */
function sweptCancelEvents(rows: string, reason: string) {
  const from = sql.table(rows);
  return sql`
      INSERT INTO task_events (tenant_id, task_id, type, from_status, to_status, attempt, reason)
      SELECT tenant_id, id, type, from_status, to_status, attempt, reason FROM (
        SELECT id AS task, 1 AS ord, tenant_id, id, 'cancel_requested' AS type, NULL::text AS from_status,
               NULL::text AS to_status, attempt, ${reason} AS reason
        FROM ${from} WHERE requested_before IS NULL
        UNION ALL
        SELECT id, 2, tenant_id, id, 'status_changed', from_status, status, attempt, ${`${reason} (swept)`}
        FROM ${from} WHERE status = 'cancelled'
      ) ordered ORDER BY task, ord`;
}

function reported(writer: TaskWriter, change: 'status' | 'cancel', rows: readonly TaskRow[]): TaskRecord[] {
  const tasks = rows.map(toTaskRecord);
  writer.changes.changed(change, tasks);
  return tasks;
}
