import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import { DEFAULT_LOST_AFTER_MS } from '../tasks/task-sweeper.ts';

/**
 * The content_watches table (migration 0013): which module resources API instances hold
 * subscriptions to, for the workers that load the modules to watch. API instances add and remove
 * their rows and read how many changes each has seen; workers read what to watch and record
 * changes. Every write NOTIFYs, as a hint: both sides poll as well.
 *
 * And content_watch_leases (migration 0014): which one of the workers that could run a watch does.
 */

/** A row was added or removed: workers serving its tool look again. Payload: the tool. */
export const CONTENT_WATCHES_CHANNEL = 'taskgate_content_watches';
/** A watched resource changed: API instances read their rows' counts. Payload: the tenant and URI. */
export const CONTENT_CHANGED_CHANNEL = 'taskgate_content_changed';

type Db = Kysely<Database>;

export interface ContentWatchKey {
  readonly apiInstanceId: string;
  readonly tenantId: string;
  readonly uri: string;
}

/**
 * Holds (tenant, URI) for an API instance, served by `tool`; resolves with its change count now,
 * the baseline later counts are compared with. Adding a row held already keeps its count.
 */
export async function addContentWatch(db: Db, watch: ContentWatchKey & { readonly tool: string }): Promise<bigint> {
  const { rows } = await sql<{ changes: string }>`
    WITH added AS (
      INSERT INTO content_watches (api_instance_id, tool, tenant_id, uri)
      VALUES (${watch.apiInstanceId}, ${watch.tool}, ${watch.tenantId}, ${watch.uri})
      ON CONFLICT (api_instance_id, tenant_id, uri) DO UPDATE SET tool = EXCLUDED.tool
      RETURNING changes
    )
    SELECT changes::text AS changes, pg_notify(${CONTENT_WATCHES_CHANNEL}, ${watch.tool}) FROM added`.execute(db);
  return BigInt(rows[0]?.changes ?? '0');
}

export async function removeContentWatch(db: Db, watch: ContentWatchKey): Promise<void> {
  await sql`
    WITH removed AS (
      DELETE FROM content_watches
      WHERE api_instance_id = ${watch.apiInstanceId} AND tenant_id = ${watch.tenantId} AND uri = ${watch.uri}
      RETURNING tool
    )
    SELECT pg_notify(${CONTENT_WATCHES_CHANNEL}, tool) FROM removed`.execute(db);
}

export interface WantedWatch {
  readonly tool: string;
  readonly tenantId: string;
  readonly uri: string;
}

/**
 * The (tenant, URI) pairs of `tools` some live API instance holds, sorted: an instance not stopped
 * whose heartbeat is recent (a crashed API's rows stay until retention, unwatched).
 */
export async function wantedContentWatches(
  db: Db,
  tools: readonly string[],
  options: { readonly liveWithinMs?: number } = {},
): Promise<WantedWatch[]> {
  if (tools.length === 0) return [];
  const liveWithinMs = options.liveWithinMs ?? DEFAULT_LOST_AFTER_MS;
  const { rows } = await sql<{ tool: string; tenant_id: string; uri: string }>`
    SELECT DISTINCT w.tool, w.tenant_id, w.uri
    FROM content_watches w JOIN instances i ON i.id = w.api_instance_id
    WHERE w.tool = ANY(${[...tools]}::text[])
      AND i.stopped_at IS NULL AND i.heartbeat_at > now() - ${liveWithinMs} * interval '1 millisecond'
    ORDER BY w.tool, w.tenant_id, w.uri`.execute(db);
  return rows.map((row) => ({ tool: row.tool, tenantId: row.tenant_id, uri: row.uri }));
}

/** A watched resource changed: every instance's row of it counts one more, and they are told. */
export async function recordContentChange(db: Db, change: { readonly tenantId: string; readonly uri: string }) {
  await sql`
    WITH moved AS (
      UPDATE content_watches SET changes = changes + 1
      WHERE tenant_id = ${change.tenantId} AND uri = ${change.uri}
      RETURNING 1
    )
    SELECT pg_notify(${CONTENT_CHANGED_CHANNEL}, ${JSON.stringify({ tenantId: change.tenantId, uri: change.uri })})
    WHERE EXISTS (SELECT 1 FROM moved)`.execute(db);
}

/** An API instance's rows with their tools and change counts. */
export async function contentWatchCounts(
  db: Db,
  apiInstanceId: string,
): Promise<{ tool: string; tenantId: string; uri: string; changes: bigint }[]> {
  const { rows } = await sql<{ tool: string; tenant_id: string; uri: string; changes: string }>`
    SELECT tool, tenant_id, uri, changes::text AS changes FROM content_watches
    WHERE api_instance_id = ${apiInstanceId}`.execute(db);
  return rows.map((row) => ({ tool: row.tool, tenantId: row.tenant_id, uri: row.uri, changes: BigInt(row.changes) }));
}

/** How long a watch lease lasts unrenewed, by default: ten of the workers' one-second reads. */
export const DEFAULT_WATCH_LEASE_MS = 10_000;

/**
 * Renews or takes the leases of `wanted` (tenant, URI) pairs for `workerId` and releases its
 * others; resolves with the pairs it holds now, as `${tenant}\n${uri}`, each with how long its
 * lease has left (milliseconds, by Postgres's clock: the caller stops the watch before then if it
 * cannot read again, for another worker may take it from then on). A pair leased by another
 * worker whose lease is still in its term stays that worker's. Expired leases of pairs nobody
 * wants go too, so a crashed worker's leases do not stay for good.
 *
 * A held lease is rewritten only in the second half of its term: between, a read locks its rows
 * (ON CONFLICT locks a row it does not update) but leaves no new row version behind. Claims and
 * releases lock rows in (tenant, URI) order, so two workers claiming overlapping pairs, or one
 * stopping as another claims, wait for each other instead of deadlocking.
 */
export async function claimContentWatches(
  db: Db,
  workerId: string,
  wanted: readonly { readonly tenantId: string; readonly uri: string }[],
  options: { readonly leaseMs?: number } = {},
): Promise<Map<string, number>> {
  const leaseMs = options.leaseMs ?? DEFAULT_WATCH_LEASE_MS;
  // One row per pair: two versions of a module (a rolling deploy) may both name it.
  const pairs = new Map(wanted.map((watch) => [pairKey(watch.tenantId, watch.uri), watch]));
  const tenants = [...pairs.values()].map((watch) => watch.tenantId);
  const uris = [...pairs.values()].map((watch) => watch.uri);
  // A lease of its own it gives up (a watch nobody holds now, or one that failed to start here)
  // is told to the other workers, which may take it at once.
  await sql`
    WITH released AS (
      DELETE FROM content_watch_leases l
      WHERE (l.tenant_id, l.uri) IN (
        SELECT o.tenant_id, o.uri FROM content_watch_leases o
        WHERE (o.worker_id = ${workerId} OR o.expires_at < now())
          AND NOT EXISTS (
            SELECT 1 FROM unnest(${tenants}::text[], ${uris}::text[]) AS w(tenant_id, uri)
            WHERE w.tenant_id = o.tenant_id AND w.uri = o.uri
          )
        ORDER BY o.tenant_id, o.uri
        FOR UPDATE SKIP LOCKED
      )
      RETURNING l.worker_id
    )
    SELECT pg_notify(${CONTENT_WATCHES_CHANNEL}, '')
    WHERE EXISTS (SELECT 1 FROM released WHERE worker_id = ${workerId})`.execute(db);
  if (pairs.size === 0) return new Map();
  const { rows } = await sql<{ tenant_id: string; uri: string; left_ms: number }>`
    WITH wanted AS (
      SELECT w.tenant_id, w.uri FROM unnest(${tenants}::text[], ${uris}::text[]) AS w(tenant_id, uri)
    ),
    claimed AS (
      INSERT INTO content_watch_leases AS l (tenant_id, uri, worker_id, expires_at)
      SELECT tenant_id, uri, ${workerId}, now() + ${leaseMs} * interval '1 millisecond'
      FROM wanted ORDER BY tenant_id, uri
      ON CONFLICT (tenant_id, uri) DO UPDATE SET worker_id = EXCLUDED.worker_id, expires_at = EXCLUDED.expires_at
      WHERE l.expires_at < now()
         OR (l.worker_id = EXCLUDED.worker_id AND l.expires_at < now() + ${leaseMs / 2} * interval '1 millisecond')
      RETURNING l.tenant_id, l.uri, l.expires_at
    )
    SELECT tenant_id, uri, extract(epoch FROM expires_at - now()) * 1000 AS left_ms FROM claimed
    UNION ALL
    -- Held and not rewritten: the rows as they were before this statement (a lease in its term is
    -- nobody else's to take meanwhile).
    SELECT l.tenant_id, l.uri, extract(epoch FROM l.expires_at - now()) * 1000 AS left_ms
    FROM content_watch_leases l JOIN wanted w ON w.tenant_id = l.tenant_id AND w.uri = l.uri
    WHERE l.worker_id = ${workerId} AND l.expires_at >= now()
      AND NOT EXISTS (SELECT 1 FROM claimed c WHERE c.tenant_id = l.tenant_id AND c.uri = l.uri)`.execute(db);
  return new Map(rows.map((row) => [pairKey(row.tenant_id, row.uri), Number(row.left_ms)]));
}

/**
 * Gives up all of `workerId`'s leases as it stops, and tells the other workers, which take them at
 * once, not at their next poll. Rows are locked in (tenant, URI) order, as claims lock them.
 */
export async function releaseContentWatches(db: Db, workerId: string): Promise<void> {
  await sql`
    WITH released AS (
      DELETE FROM content_watch_leases l
      WHERE (l.tenant_id, l.uri) IN (
        SELECT o.tenant_id, o.uri FROM content_watch_leases o
        WHERE o.worker_id = ${workerId}
        ORDER BY o.tenant_id, o.uri
        FOR UPDATE
      ) AND l.worker_id = ${workerId}
      RETURNING 1
    )
    -- No tool in the payload: a lease names none, so every worker serving content reads again.
    SELECT pg_notify(${CONTENT_WATCHES_CHANNEL}, '') WHERE EXISTS (SELECT 1 FROM released)`.execute(db);
}

/** The key claimContentWatches names a (tenant, URI) pair by. */
export function pairKey(tenantId: string, uri: string): string {
  return `${tenantId}\n${uri}`;
}
