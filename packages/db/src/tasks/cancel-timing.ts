import { type CancelSignal, isCancelSignal } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/** How a cancelled task's cancel went: its signal, and the time from the request to the end. */
export interface CancelTiming {
  readonly signal: CancelSignal;
  readonly reason: string | null;
  /** From the cancel request's arrival to this read, right after the handler stopped (database clock). */
  readonly seconds: number;
}

/**
 * Read by the worker as soon as the handler of a cancelled task has stopped (and its end is
 * written). Both instants are the database's: the API that took the cancel and the worker that
 * ran the handler may be on machines whose clocks disagree. Not finished_at: a 2025-11-25
 * tasks/cancel, or the cancel of a parked task, ends the task in the request's own statement,
 * while the handler may run on. Null when the task did not end cancelled after a request.
 */
export async function readCancelTiming(db: Kysely<Database>, taskId: string): Promise<CancelTiming | null> {
  const { rows } = await sql<{ signal: string | null; reason: string | null; seconds: number }>`
    SELECT cancel_signal AS signal, cancel_reason AS reason,
           extract(epoch FROM clock_timestamp() - cancel_requested_at)::float8 AS seconds
    FROM tasks
    WHERE id = ${taskId} AND status = 'cancelled' AND cancel_requested_at IS NOT NULL
      AND finished_at IS NOT NULL`.execute(db);
  const row = rows[0];
  if (row === undefined) return null;
  return {
    signal: isCancelSignal(row.signal) ? row.signal : 'other',
    reason: row.reason,
    seconds: Math.max(0, row.seconds),
  };
}
