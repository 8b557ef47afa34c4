import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import type { TaskWriter } from './task-writer.ts';

/**
 * What a durable task tells the request that waits for it (migrations 0012, 0022): its ctx.log()
 * messages and its ctx.elicitationComplete() notices, in the order the handler made them. Written
 * by the attempt that holds the task, read by the API instance whose request waits for it. The
 * task row counts them (tasks.log_count), so a reader that sees the count grow fetches only what it
 * has not sent yet.
 */

type Db = Kysely<Database>;

/** Most messages one task keeps, over all its attempts (each attempt sends at most 200). */
export const MAX_TASK_LOG_MESSAGES = 1_000;

/** A task's message as read back: a ctx.log() message, or the completion of a URL elicitation. */
export type TaskLogMessage =
  | {
      /** 1, 2, ... in the order the handler made them. */
      readonly seq: number;
      readonly kind: 'log';
      readonly level: string;
      readonly logger: string | null;
      readonly data: unknown;
    }
  | { readonly seq: number; readonly kind: 'elicitation_complete'; readonly elicitationId: string };

export type NewLogMessage =
  | { readonly kind?: 'log'; readonly level: string; readonly logger?: string | undefined; readonly data: unknown }
  | { readonly kind: 'elicitation_complete'; readonly elicitationId: string };

/**
 * Appends messages to a task that this attempt still runs; anything past MAX_TASK_LOG_MESSAGES is
 * dropped. A log message is kept only when the caller asked for a level (none would hear it
 * otherwise); a completion whatever the level, since the request decides whether its client can
 * hear one. Returns how many were kept (0: the task moved on, or is full). Announced as a `log` change.
 */
export async function appendLogMessages(
  writer: TaskWriter,
  input: { readonly taskId: string; readonly attempt: number; readonly messages: readonly NewLogMessage[] },
): Promise<number> {
  if (input.messages.length === 0) return 0;
  const messages = JSON.stringify(
    input.messages.map((message) =>
      message.kind === 'elicitation_complete'
        ? { kind: message.kind, level: null, logger: null, data: message.elicitationId }
        : { kind: 'log', level: message.level, logger: message.logger ?? null, data: message.data },
    ),
  );
  // One statement: the row lock orders concurrent appends (there are none from one attempt, but a
  // stale attempt may still be writing), the insert takes the next numbers (row_number over the
  // messages kept, so a log message left out leaves no gap), the count follows.
  const { rows } = await sql<{ id: string; tenant_id: string; kept: number }>`
    WITH task AS (
      SELECT id, tenant_id, log_count, log_level FROM tasks
      WHERE id = ${input.taskId}::uuid AND attempt = ${input.attempt} AND status = 'working'
      FOR UPDATE
    ), numbered AS (
      SELECT task.tenant_id, task.id, (task.log_count + row_number() OVER (ORDER BY m.ord))::int AS seq, m.message
      FROM task, jsonb_array_elements(${messages}::jsonb) WITH ORDINALITY AS m(message, ord)
      WHERE m.message->>'kind' = 'elicitation_complete' OR task.log_level IS NOT NULL
    ), inserted AS (
      INSERT INTO task_log_messages (tenant_id, task_id, seq, attempt, kind, level, logger, data)
      SELECT tenant_id, id, seq, ${input.attempt}, message->>'kind', message->>'level', message->>'logger',
             coalesce(message->'data', 'null'::jsonb)
      FROM numbered
      WHERE seq <= ${MAX_TASK_LOG_MESSAGES}
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
  const { rows } = await sql<{ seq: number; kind: string; level: string; logger: string | null; data: unknown }>`
    SELECT seq, kind, level, logger, data FROM task_log_messages
    WHERE tenant_id = ${input.tenantId} AND task_id = ${input.taskId}::uuid AND seq > ${input.afterSeq}
    ORDER BY seq
    LIMIT ${input.limit}`.execute(db);
  return rows.map(({ seq, kind, level, logger, data }) =>
    kind === 'elicitation_complete'
      ? { seq, kind, elicitationId: data as string }
      : { seq, kind: 'log', level, logger, data },
  );
}
