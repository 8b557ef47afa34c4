import { type Kysely, sql, type Transaction } from 'kysely';
import { PGBOSS_SCHEMA } from '../migrations/pgboss-schema.ts';
import type { Database } from '../schema.ts';
import type { TaskJobData } from '../task-queue.ts';
import { LEGACY_TASK_QUEUE } from '../task-queue.ts';

/**
 * The jobs an upgrade left in the single task queue of before (LEGACY_TASK_QUEUE), read with the
 * tool of their task so that a worker can forward each to its tool's queue. Only waiting jobs
 * (created, retry) are taken: an active one belongs to a worker of the old release, and comes back
 * as `retry` if that worker hands it back or dies.
 */

const pgboss = sql.id(PGBOSS_SCHEMA);

/** The job's task id when its data names one (a job's data is only JSON to pg-boss). */
const taskIdOf = sql`CASE WHEN j.data->>'taskId' ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                      THEN (j.data->>'taskId')::uuid END`;

/** The tools whose tasks have jobs waiting in the legacy queue (their queues are ensured first). */
export async function legacyJobTools(db: Kysely<Database>): Promise<string[]> {
  const { rows } = await sql<{ tool: string }>`
    SELECT DISTINCT t.tool FROM ${pgboss}.job j JOIN tasks t ON t.id = ${taskIdOf}
    WHERE j.name = ${LEGACY_TASK_QUEUE} AND j.state IN ('created', 'retry') AND t.status = 'working'`.execute(db);
  return rows.map((row) => row.tool);
}

export interface LegacyJob {
  readonly id: string;
  readonly data: TaskJobData;
  /** The tool of its task; null when the task is gone or no longer working (nothing to run). */
  readonly tool: string | null;
}

/**
 * Locks up to `limit` waiting legacy jobs for the transaction that forwards them (SKIP LOCKED: two
 * workers draining at once take different jobs).
 */
export async function lockLegacyJobs(trx: Transaction<Database>, limit: number): Promise<LegacyJob[]> {
  const { rows } = await sql<{ id: string; data: TaskJobData; tool: string | null }>`
    SELECT j.id, j.data, t.tool FROM ${pgboss}.job j
    LEFT JOIN tasks t ON t.id = ${taskIdOf} AND t.status = 'working'
    WHERE j.name = ${LEGACY_TASK_QUEUE} AND j.state IN ('created', 'retry')
    ORDER BY j.created_on LIMIT ${limit}
    FOR UPDATE OF j SKIP LOCKED`.execute(trx);
  return rows;
}
