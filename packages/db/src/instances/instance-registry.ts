import { type Kysely, sql } from 'kysely';
import type { Database, InstanceKind } from '../schema.ts';

/**
 * The instances table: every API and worker instance by the id it writes into tasks
 * (api_instance_id, worker_id), with its heartbeat. The sweeper reads it to tell a task whose
 * instance is gone from one whose instance is only slow.
 */

export interface InstanceIdentity {
  readonly id: string;
  readonly kind: InstanceKind;
  readonly host: string;
  readonly pid: number;
}

/** Records the instance as running (again, if its id was seen before). */
export async function registerInstance(db: Kysely<Database>, instance: InstanceIdentity): Promise<void> {
  await sql`
    INSERT INTO instances (id, kind, host, pid) VALUES (${instance.id}, ${instance.kind}, ${instance.host}, ${instance.pid})
    ON CONFLICT (id) DO UPDATE SET heartbeat_at = now(), stopped_at = NULL, host = EXCLUDED.host, pid = EXCLUDED.pid`.execute(
    db,
  );
}

/** The instance is alive; false when its row is gone or it was marked stopped (re-register then). */
export async function heartbeatInstance(db: Kysely<Database>, id: string): Promise<boolean> {
  const { rows } = await sql<{ id: string }>`
    UPDATE instances SET heartbeat_at = now() WHERE id = ${id} AND stopped_at IS NULL RETURNING id`.execute(db);
  return rows.length > 0;
}

/** A graceful stop: from now on the instance counts as gone, without waiting for its heartbeat to age. */
export async function markInstanceStopped(db: Kysely<Database>, id: string): Promise<void> {
  await sql`UPDATE instances SET stopped_at = now() WHERE id = ${id}`.execute(db);
}

/** Retention: instances stopped or silent for longer than `olderThanMs`. */
export async function deleteStaleInstances(db: Kysely<Database>, olderThanMs: number): Promise<number> {
  const result = await sql`
    DELETE FROM instances
    WHERE coalesce(stopped_at, heartbeat_at) < now() - ${olderThanMs} * interval '1 millisecond'`.execute(db);
  return Number(result.numAffectedRows ?? 0);
}
