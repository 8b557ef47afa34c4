import { sql } from 'kysely';

/**
 * Whether the worker holding a task (`tasks.worker_id`) is lost: no live instance row of it has
 * heartbeated within `lostAfterMs`. With null — a caller that has not itself watched the database
 * answer for that long, as after a Postgres restart, when every heartbeat is old — never: only one
 * that watched the holder stay silent while the database was up may judge. `tasks` names the
 * tasks table as the statement aliases it.
 */
export function lostHolder(lostAfterMs: number | null, tasks = 'tasks') {
  if (lostAfterMs === null) return sql`false`;
  return sql`NOT EXISTS (
          SELECT 1 FROM instances i WHERE i.id = ${sql.ref(`${tasks}.worker_id`)} AND i.stopped_at IS NULL
            AND i.heartbeat_at > now() - ${lostAfterMs} * interval '1 millisecond')`;
}
