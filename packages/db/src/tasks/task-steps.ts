import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * Durable steps of a multi-step handler (ctx.step). A step's row is written only by the attempt
 * that holds the task, right after the step's function returned; a later attempt reads it back
 * instead of running the step again. An irreversible step's row is written first as `started`,
 * before its function runs, so a later attempt knows the step may have taken effect without a
 * record of how (migration 0018 opens a reconciliation item when such a task ends unfinished).
 */

type Db = Kysely<Database>;

/** A step as its row says: done with its result, or an irreversible one started and not recorded. */
export type StepRecord =
  | { readonly state: 'done'; readonly result: unknown; readonly irreversible: boolean }
  | { readonly state: 'started'; readonly irreversible: true; readonly attempt: number };

/** The task's steps, by name (each result parsed fresh from JSON). */
export async function readSteps(db: Db, taskId: string): Promise<Map<string, StepRecord>> {
  const { rows } = await sql<{ name: string; result: unknown; state: string; irreversible: boolean; attempt: number }>`
    SELECT name, result, state, irreversible, attempt FROM task_steps WHERE task_id = ${taskId}`.execute(db);
  return new Map(
    rows.map((row): [string, StepRecord] => [
      row.name,
      row.state === 'started'
        ? { state: 'started', irreversible: true, attempt: row.attempt }
        : { state: 'done', result: row.result, irreversible: row.irreversible },
    ]),
  );
}

/**
 * Marks an irreversible step started, before its function runs; false when this attempt no longer
 * holds the task (or the step has a row already). The task row is locked FOR SHARE: a terminal
 * transition running at the same moment either commits first (and this writes nothing) or waits
 * for this and then finds the row — its trigger opens the reconciliation item either way.
 */
export async function startIrreversibleStep(
  db: Db,
  input: { taskId: string; attempt: number; name: string },
): Promise<boolean> {
  const { rows } = await sql<{ name: string }>`
    INSERT INTO task_steps (tenant_id, task_id, name, result, attempt, irreversible, state)
    SELECT t.tenant_id, t.id, ${input.name}, NULL, t.attempt, true, 'started'
    FROM tasks t
    WHERE t.id = ${input.taskId} AND t.attempt = ${input.attempt} AND t.status IN ('working', 'input_required')
    FOR SHARE OF t
    -- A retry of this very write (its answer was lost in an outage) finds its own row.
    ON CONFLICT (task_id, name) DO UPDATE SET state = task_steps.state
      WHERE task_steps.attempt = EXCLUDED.attempt AND task_steps.state = 'started'
    RETURNING name`.execute(db);
  return rows.length > 0;
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

/**
 * Records how an irreversible step went, after its function returned. Written even when the task
 * has ended meanwhile (a clock ran out mid-payment): the effect happened, and the item that ending
 * opened learns it (its kind and details are brought up to date). True when the attempt still
 * holds a live task, so the handler may go on.
 */
export async function finishIrreversibleStep(
  db: Db,
  input: { taskId: string; attempt: number; name: string; result: unknown },
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    // The task row first, FOR SHARE, as the start does: a terminal transition running now either
    // commits before this reads anything (and the item is brought up to date below) or waits for
    // this commit (and its trigger finds the step done). Without it each would read the other's
    // old state, and the item would keep "unknown" for a step that is recorded done.
    await sql`SELECT 1 FROM tasks WHERE id = ${input.taskId} FOR SHARE`.execute(tx);
    const { rows } = await sql<{ live: boolean }>`
      WITH finished AS (
        UPDATE task_steps SET state = 'done', result = ${JSON.stringify(input.result ?? null)}::jsonb
        -- Not only a started row: a retry of this very write (its answer lost) finds it done.
        WHERE task_id = ${input.taskId} AND name = ${input.name} AND irreversible
          AND attempt = ${input.attempt}
        RETURNING task_id)
      SELECT (t.attempt = ${input.attempt} AND t.status IN ('working', 'input_required')) AS live
      FROM finished JOIN tasks t ON t.id = finished.task_id`.execute(tx);
    const row = rows[0];
    if (row === undefined) return false; // not this attempt's started step
    if (!row.live) {
      // Its own statement: the CTE's snapshot would not see the step it just finished.
      // The trigger's unknown-outcome item, once no irreversible step is unknown any more, says what
      // happened; any other item (a refused retry's) keeps its word and learns the details.
      await sql`
        UPDATE reconciliation_items r SET
          details = taskgate_reconciliation_details(r.task_id),
          kind = CASE WHEN s.settled THEN 'abandoned_with_effects' ELSE r.kind END,
          reason = CASE WHEN s.settled
            THEN format('the task ended %s while an irreversible step ran; the step then took effect', s.status)
            ELSE r.reason END
        FROM (
          SELECT t.status, NOT EXISTS (
              SELECT 1 FROM task_steps WHERE task_id = t.id AND irreversible AND state = 'started')
            AND i.kind = 'unknown_outcome'
            AND i.reason = format('the task ended %s while an irreversible step''s outcome was unknown', t.status)
            AS settled
          FROM tasks t JOIN reconciliation_items i ON i.task_id = t.id
          WHERE t.id = ${input.taskId}) s
        WHERE r.task_id = ${input.taskId} AND r.resolved_at IS NULL`.execute(tx);
    }
    return row.live;
  });
}
