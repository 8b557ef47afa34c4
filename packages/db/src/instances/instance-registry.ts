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

export interface InstanceRecord {
  readonly id: string;
  readonly kind: InstanceKind;
  readonly host: string;
  readonly pid: number;
  readonly startedAt: Date;
  readonly heartbeatAt: Date;
  readonly stoppedAt: Date | null;
  /** live: heartbeating within `liveWithinMs`; silent: not stopped, but its heartbeat is older; stopped. */
  readonly state: 'live' | 'silent' | 'stopped';
}

/**
 * The instances live now and those stopped or silent for less than `recentMs`, newest start
 * first (the console's workers page). At most `limit`: a fleet is tens of instances, and old ones
 * wait for retention.
 */
export async function listInstances(
  db: Kysely<Database>,
  options: { readonly liveWithinMs: number; readonly recentMs: number; readonly limit: number },
): Promise<InstanceRecord[]> {
  const { rows } = await sql<{
    id: string;
    kind: InstanceKind;
    host: string;
    pid: number;
    started_at: Date;
    heartbeat_at: Date;
    stopped_at: Date | null;
    live: boolean;
  }>`
    SELECT id, kind, host, pid, started_at, heartbeat_at, stopped_at,
           stopped_at IS NULL AND heartbeat_at > now() - ${options.liveWithinMs} * interval '1 millisecond' AS live
    FROM instances
    WHERE (stopped_at IS NULL AND heartbeat_at > now() - ${options.liveWithinMs} * interval '1 millisecond')
       OR coalesce(stopped_at, heartbeat_at) > now() - ${options.recentMs} * interval '1 millisecond'
    ORDER BY started_at DESC, id
    LIMIT ${options.limit}`.execute(db);
  return rows.map((row) => ({
    id: row.id,
    kind: row.kind,
    host: row.host,
    pid: row.pid,
    startedAt: row.started_at,
    heartbeatAt: row.heartbeat_at,
    stoppedAt: row.stopped_at,
    state: row.stopped_at !== null ? 'stopped' : row.live ? 'live' : 'silent',
  }));
}
