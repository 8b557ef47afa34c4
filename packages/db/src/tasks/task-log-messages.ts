import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import type { TaskWriter } from './task-writer.ts';

/**
 * ctx.log() messages of durable tasks (migration 0012): written by the attempt that holds the
 * task, read by the API instance whose request waits for it. The task row counts them
 * (tasks.log_count), so a reader that sees the count grow fetches only what it has not sent yet.
 */

type Db = Kysely<Database>;

/** Most messages one task keeps, over all its attempts (each attempt sends at most 200). */
export const MAX_TASK_LOG_MESSAGES = 1_000;

export interface TaskLogMessage {
  /** 1, 2, ... in the order the handler logged them. */
  readonly seq: number;
  readonly level: string;
  readonly logger: string | null;
  readonly data: unknown;
}

export interface NewLogMessage {
  readonly level: string;
  readonly logger?: string | undefined;
  readonly data: unknown;
}

/**
 * Appends messages to a task that this attempt still runs and whose caller asked for a log level;
 * anything past MAX_TASK_LOG_MESSAGES is dropped. Returns how many were kept (0: the task moved
 * on, asked for no messages, or is full). Announced as a `log` change.
 */
export async function appendLogMessages(
  writer: TaskWriter,
  input: { readonly taskId: string; readonly attempt: number; readonly messages: readonly NewLogMessage[] },
): Promise<number> {
  if (input.messages.length === 0) return 0;
  const messages = JSON.stringify(
    input.messages.map((message) => ({ level: message.level, logger: message.logger ?? null, data: message.data })),
  );
  // One statement: the row lock orders concurrent appends (there are none from one attempt, but a
  // stale attempt may still be writing), the insert takes the next numbers, the count follows.
  const { rows } = await sql<{ id: string; tenant_id: string; kept: number }>`
    WITH task AS (
      SELECT id, tenant_id, log_count FROM tasks
      WHERE id = ${input.taskId}::uuid AND attempt = ${input.attempt} AND status = 'working'
        AND log_level IS NOT NULL
      FOR UPDATE
    ), inserted AS (
      INSERT INTO task_log_messages (tenant_id, task_id, seq, attempt, level, logger, data)
      SELECT task.tenant_id, task.id, task.log_count + m.ord, ${input.attempt},
             m.message->>'level', m.message->>'logger', coalesce(m.message->'data', 'null'::jsonb)
      FROM task, jsonb_array_elements(${messages}::jsonb) WITH ORDINALITY AS m(message, ord)
      WHERE task.log_count + m.ord <= ${MAX_TASK_LOG_MESSAGES}
      RETURNING seq
    ), counted AS (
      SELECT count(*)::int AS kept FROM inserted
    )
    UPDATE tasks SET log_count = tasks.log_count + counted.kept
    FROM task, counted
    WHERE tasks.id = task.id AND counted.kept > 0
    RETURNING tasks.id, tasks.tenant_id, counted.kept`.execute(writer.db);
  writer.changes.changed(
    'log',
    rows.map((row) => ({ id: row.id, tenantId: row.tenant_id, status: 'working' as const })),
  );
  return rows[0]?.kept ?? 0;
}

/** A task's messages after `afterSeq`, oldest first, at most `limit`; tenant-scoped. */
export async function readLogMessages(
  db: Db,
  input: { readonly tenantId: string; readonly taskId: string; readonly afterSeq: number; readonly limit: number },
): Promise<TaskLogMessage[]> {
  const { rows } = await sql<TaskLogMessage>`
    SELECT seq, level, logger, data FROM task_log_messages
    WHERE tenant_id = ${input.tenantId} AND task_id = ${input.taskId}::uuid AND seq > ${input.afterSeq}
    ORDER BY seq
    LIMIT ${input.limit}`.execute(db);
  return rows;
}
