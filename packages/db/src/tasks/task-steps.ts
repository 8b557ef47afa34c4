import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * Durable steps of a multi-step handler (ctx.step). A step's row is written only by the attempt
 * that holds the task, right after the step's function returned; a later attempt reads it back
 * instead of running the step again.
 */

type Db = Kysely<Database>;

/** The stored results of a task's completed steps, by name (each parsed fresh from JSON). */
export async function readSteps(db: Db, taskId: string): Promise<Map<string, unknown>> {
  const { rows } = await sql<{ name: string; result: unknown }>`
    SELECT name, result FROM task_steps WHERE task_id = ${taskId}`.execute(db);
  return new Map(rows.map((row) => [row.name, row.result]));
}

/**
 * Records a completed step, fenced by the attempt: if the task has moved on (a newer attempt, a
 * terminal state), nothing is written and false comes back — this attempt no longer owns the task.
 */
export async function recordStep(
  db: Db,
  input: { taskId: string; attempt: number; name: string; result: unknown },
): Promise<boolean> {
  const { rows } = await sql<{ name: string }>`
    INSERT INTO task_steps (tenant_id, task_id, name, result, attempt)
    SELECT t.tenant_id, t.id, ${input.name}, ${JSON.stringify(input.result ?? null)}::jsonb, t.attempt
    FROM tasks t
    WHERE t.id = ${input.taskId} AND t.attempt = ${input.attempt} AND t.status IN ('working', 'input_required')
    ON CONFLICT (task_id, name) DO NOTHING
    RETURNING name`.execute(db);
  return rows.length > 0;
}
