import { TaskgateError } from '@taskgate/errors';
import { type ToolCatalogEntry, toolFingerprint } from '@taskgate/reliability';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';
import { DEFAULT_LOST_AFTER_MS } from '../tasks/task-sweeper.ts';

/**
 * The tool_catalog table (migration 0006): the tools each instance serves, one row per
 * (instance, name). Workers publish; API processes list. An instance's rows stay listed while it
 * lives and for a window after its last sign of life, so a worker restart does not make its tools
 * blink out of tools/list.
 */

/** publishTools notifies here after every publish (a hint: readers poll as well). */
export const CATALOG_CHANNEL = 'taskgate_catalog';

/**
 * How long a tool stays listed after its last server stopped or went silent: longer than a worker
 * takes to restart, short enough that a tool nobody will run leaves tools/list soon.
 */
export const DEFAULT_CATALOG_WINDOW_MS = 30_000;

type Db = Kysely<Database>;

export interface PublishReport {
  readonly added: number;
  /** Served before under the same name with another fingerprint, definition or concurrency. */
  readonly changed: number;
  /** Served before and no longer: deleted. */
  readonly removed: number;
  /** Identical to what was published before: left as they were (published_at kept). */
  readonly unchanged: number;
}

/** A tool as a worker publishes it: its definition, and how many of its tasks the worker runs at once. */
export interface PublishedTool extends ToolCatalogEntry {
  readonly concurrency?: number | undefined;
}

/**
 * Makes `entries` the whole of what `instanceId` serves, in one transaction. Throws
 * TG_INSTANCE_NOT_REGISTERED when the instance has no row (register first; retention may have
 * deleted it during an outage, and its rows with it).
 */
export async function publishTools(
  db: Db,
  instanceId: string,
  entries: readonly PublishedTool[],
): Promise<PublishReport> {
  const names = new Set<string>();
  for (const entry of entries) {
    if (names.has(entry.name)) throw new TypeError(`tool ${entry.name} is published twice`);
    if (entry.definition.name !== entry.name) {
      throw new TypeError(`tool ${entry.name}: its definition is named ${JSON.stringify(entry.definition.name)}`);
    }
    // Readers trust a fingerprint to name one definition (they cache by it): check it here, where
    // every row is written.
    if (toolFingerprint(entry.definition) !== entry.fingerprint) {
      throw new TypeError(`tool ${entry.name}: its fingerprint is not toolFingerprint of its definition`);
    }
    if (entry.concurrency !== undefined && !(Number.isInteger(entry.concurrency) && entry.concurrency > 0)) {
      throw new TypeError(`tool ${entry.name}: concurrency must be a positive integer`);
    }
    names.add(entry.name);
  }
  const rows = JSON.stringify(
    entries.map(({ name, fingerprint, definition, concurrency }) => ({
      name,
      fingerprint,
      definition,
      concurrency: concurrency ?? null,
    })),
  );
  return db.transaction().execute(async (trx) => {
    // Two publishes of one instance (a start racing a re-registration) take turns, so the last one
    // wins whole. The lock is the one a heartbeat's UPDATE takes: a heartbeat waits one publish.
    const { rows: instance } = await sql`
      SELECT 1 FROM instances WHERE id = ${instanceId} FOR NO KEY UPDATE`.execute(trx);
    if (instance.length === 0) {
      throw new TaskgateError(
        'TG_INSTANCE_NOT_REGISTERED',
        `instance ${instanceId} is not registered, so its tools cannot be published`,
        { details: { instanceId } },
      );
    }
    const { rows: counts } = await sql<{ added: number; changed: number; removed: number }>`
      WITH incoming AS (
        SELECT e.name, e.fingerprint, e.definition, e.concurrency
        FROM jsonb_to_recordset(${rows}::jsonb) AS e(name text, fingerprint text, definition jsonb, concurrency int)
      ), removed AS (
        DELETE FROM tool_catalog c
        WHERE c.instance_id = ${instanceId} AND c.name NOT IN (SELECT name FROM incoming)
        RETURNING 1
      ), upserted AS (
        INSERT INTO tool_catalog (instance_id, name, fingerprint, definition, concurrency)
        SELECT ${instanceId}, name, fingerprint, definition, concurrency FROM incoming
        ON CONFLICT (instance_id, name) DO UPDATE
          SET fingerprint = EXCLUDED.fingerprint, definition = EXCLUDED.definition,
              concurrency = EXCLUDED.concurrency,
              -- When the definition changed: readers order servers by it, and slots are no version.
              published_at = CASE WHEN (tool_catalog.fingerprint, tool_catalog.definition)
                                       IS DISTINCT FROM (EXCLUDED.fingerprint, EXCLUDED.definition)
                                  THEN now() ELSE tool_catalog.published_at END
          WHERE (tool_catalog.fingerprint, tool_catalog.definition, tool_catalog.concurrency)
                IS DISTINCT FROM (EXCLUDED.fingerprint, EXCLUDED.definition, EXCLUDED.concurrency)
        -- xmax is 0 on a row version this statement inserted, and set on one it updated.
        RETURNING xmax = 0 AS inserted
      )
      SELECT count(*) FILTER (WHERE inserted)::int AS added,
             count(*) FILTER (WHERE NOT inserted)::int AS changed,
             (SELECT count(*) FROM removed)::int AS removed
      FROM upserted`.execute(trx);
    // Sent even when no row changed: an instance that comes back under its old id brings its tools
    // back into the listing without changing a row. Delivered at commit, or never.
    await sql`SELECT pg_notify(${CATALOG_CHANNEL}, ${instanceId})`.execute(trx);
    const { added, changed, removed } = counts[0] ?? { added: 0, changed: 0, removed: 0 };
    return { added, changed, removed, unchanged: entries.length - added - changed };
  });
}

export interface CatalogTool {
  readonly name: string;
  /** The fingerprint of `definition`, the one served for this name. */
  readonly fingerprint: string;
  readonly definition: Readonly<Record<string, unknown>>;
  /** Every fingerprint a listed instance serves under this name, sorted: more than one is version skew. */
  readonly fingerprints: readonly string[];
  /** Those of them a live instance serves, sorted; empty when only the window keeps the tool listed. */
  readonly liveFingerprints: readonly string[];
  /** Whether a live instance serves the name at all. */
  readonly live: boolean;
}

export interface ListCatalogOptions {
  /** How long a tool stays listed after its last server's last sign of life. */
  readonly windowMs: number;
  /** An instance not stopped whose heartbeat is this recent is live (default: the sweeper's 10 s). */
  readonly liveWithinMs?: number;
  /**
   * Definitions the caller holds already, by fingerprint: these are not read again (a poller's
   * reads then carry only what changed). publishTools checks every fingerprint against its
   * definition, so a fingerprint names one definition.
   */
  readonly knownDefinitions?: ReadonlyMap<string, Readonly<Record<string, unknown>>>;
}

interface CatalogRow {
  name: string;
  fingerprint: string;
  definition: Record<string, unknown> | null;
  fingerprints: string[];
  live_fingerprints: string[];
}

/**
 * The tools to serve, sorted by name (byte order). Listed: the rows of instances that are live, or
 * that stopped (stopped_at) or went silent (heartbeat_at) less than `windowMs` ago. When several
 * instances serve one name, the definition served is chosen the same way by every reader: a live
 * instance's over another's, then the most recently published, then the lowest instance id.
 * Times are the database's, the clock heartbeats are written with.
 */
export async function listCatalog(db: Db, options: ListCatalogOptions): Promise<CatalogTool[]> {
  const liveWithinMs = options.liveWithinMs ?? DEFAULT_LOST_AFTER_MS;
  const known = options.knownDefinitions ?? new Map<string, Readonly<Record<string, unknown>>>();
  // The servers first, from instances (a few rows per running process, and old ones until
  // retention deletes them), then only their rows. `instance_id = ANY(ARRAY(servers))` restates the
  // join for the planner: it then probes the primary key with the server ids instead of hashing the
  // whole table, whose rows of long-gone instances (200 tools x 500 old instances: 100,000 rows)
  // would otherwise all be read on every poll. One sort by name serves both the choice and the
  // fingerprint sets; only the chosen row's definition is read, by its key.
  const { rows } = await sql<CatalogRow>`
    WITH servers AS MATERIALIZED (
      SELECT id, (stopped_at IS NULL AND heartbeat_at > now() - ${liveWithinMs} * interval '1 millisecond') AS live
      FROM instances
      WHERE (stopped_at IS NULL AND heartbeat_at > now() - ${liveWithinMs} * interval '1 millisecond')
         OR coalesce(stopped_at, heartbeat_at) > now() - ${options.windowMs} * interval '1 millisecond'
    ), served AS (
      SELECT c.name,
             (array_agg(c.instance_id ORDER BY s.live DESC, c.published_at DESC, c.instance_id COLLATE "C"))[1]
               AS instance_id,
             array_agg(DISTINCT c.fingerprint ORDER BY c.fingerprint) AS fingerprints,
             coalesce(array_agg(DISTINCT c.fingerprint ORDER BY c.fingerprint) FILTER (WHERE s.live), '{}')
               AS live_fingerprints
      FROM tool_catalog c JOIN servers s ON s.id = c.instance_id
      WHERE c.instance_id = ANY(ARRAY(SELECT id FROM servers))
      GROUP BY c.name
    )
    SELECT sv.name, c.fingerprint, sv.fingerprints, sv.live_fingerprints,
           CASE WHEN c.fingerprint = ANY(${[...known.keys()]}::text[]) THEN NULL ELSE c.definition END AS definition
    FROM served sv JOIN tool_catalog c ON c.instance_id = sv.instance_id AND c.name = sv.name
    ORDER BY sv.name`.execute(db);
  return rows.map((row) => ({
    name: row.name,
    fingerprint: row.fingerprint,
    definition: row.definition ?? (known.get(row.fingerprint) as Readonly<Record<string, unknown>>),
    fingerprints: row.fingerprints,
    liveFingerprints: row.live_fingerprints,
    live: row.live_fingerprints.length > 0,
  }));
}

/**
 * The names listCatalog would list, and nothing else: what /metrics reports a 0 for when a
 * listed tool has no task (a tool served but idle must differ from one nobody serves).
 */
export async function listedToolNames(
  db: Db,
  options: { readonly windowMs: number; readonly liveWithinMs?: number },
): Promise<string[]> {
  const liveWithinMs = options.liveWithinMs ?? DEFAULT_LOST_AFTER_MS;
  // The same servers as listCatalog's, and the same ANY(ARRAY(...)) probe of the primary key.
  const { rows } = await sql<{ name: string }>`
    WITH servers AS MATERIALIZED (
      SELECT id FROM instances
      WHERE (stopped_at IS NULL AND heartbeat_at > now() - ${liveWithinMs} * interval '1 millisecond')
         OR coalesce(stopped_at, heartbeat_at) > now() - ${options.windowMs} * interval '1 millisecond'
    )
    SELECT DISTINCT name FROM tool_catalog WHERE instance_id = ANY(ARRAY(SELECT id FROM servers))
    ORDER BY name`.execute(db);
  return rows.map((row) => row.name);
}

export interface InstanceTool {
  readonly name: string;
  readonly fingerprint: string;
  /** Its slots on that instance; null when the instance did not say (an older worker). */
  readonly concurrency: number | null;
}

/** The tools each of these instances published, by instance, sorted by name (the workers page). */
export async function toolsByInstance(db: Db, instanceIds: readonly string[]): Promise<Map<string, InstanceTool[]>> {
  const byInstance = new Map<string, InstanceTool[]>();
  if (instanceIds.length === 0) return byInstance;
  const { rows } = await sql<{ instance_id: string; name: string; fingerprint: string; concurrency: number | null }>`
    SELECT instance_id, name, fingerprint, concurrency FROM tool_catalog
    WHERE instance_id = ANY(${[...instanceIds]}::text[])
    ORDER BY instance_id, name COLLATE "C"`.execute(db);
  for (const row of rows) {
    const list = byInstance.get(row.instance_id) ?? [];
    list.push({ name: row.name, fingerprint: row.fingerprint, concurrency: row.concurrency });
    byInstance.set(row.instance_id, list);
  }
  return byInstance;
}
