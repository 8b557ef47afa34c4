import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import { isUuid } from './task-store.ts';

/**
 * Request-mode tasks parked for input between two requests (2026-07-28 multi round-trip: the first
 * request ended input_required with a state naming the task; the client's retry, on any API
 * instance, brings the answers). Between the two no request waits on the task, so it is tied to no
 * instance, and it carries a deadline instead (input_deadline_at, migration 0016), past which
 * cancelAbandonedInput (task-sweeps.ts) ends it: a client that never retries does not leave it
 * waiting until its max clock.
 */

type Db = Kysely<Database>;

/**
 * The request waiting on a parked task ended input_required: the task is no instance's until a
 * retry adopts it, and is cancelled `deadlineMs` from now if none does. False when the task is no
 * longer parked (answered, cancelled or ended meanwhile): nothing changed.
 */
export async function detachParkedRequest(db: Db, tenantId: string, id: string, deadlineMs: number): Promise<boolean> {
  if (!isUuid(id)) return false;
  const { numAffectedRows } = await sql`
    UPDATE tasks SET api_instance_id = NULL,
      input_deadline_at = now() + ${deadlineMs} * interval '1 millisecond'
    WHERE tenant_id = ${tenantId} AND id = ${id}::uuid AND mode = 'request' AND status = 'input_required'`.execute(db);
  return numAffectedRows === 1n;
}

/**
 * A retry brought a parked task's state to API instance `apiInstanceId`, which waits on it now:
 * the task is that instance's (lost with it, as any request's task) and has no input deadline.
 * Also for a task still working (a retry of a task that was answered meanwhile). Resolves with the
 * task's adoptions after this one, the fence of a cancel this request may write when it goes away
 * (requestCancel's `adoptions`); null when the task is not a live request-mode task of the tenant.
 */
export async function adoptParkedRequest(
  db: Db,
  tenantId: string,
  id: string,
  apiInstanceId: string | null,
): Promise<number | null> {
  if (!isUuid(id)) return null;
  const { rows } = await sql<{ adoptions: number }>`
    UPDATE tasks SET api_instance_id = ${apiInstanceId}::text, input_deadline_at = NULL, adoptions = adoptions + 1
    WHERE tenant_id = ${tenantId} AND id = ${id}::uuid AND mode = 'request'
      AND status IN ('working', 'input_required')
    RETURNING adoptions`.execute(db);
  return rows[0]?.adoptions ?? null;
}
