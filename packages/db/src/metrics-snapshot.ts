import { type Kysely, sql } from 'kysely';
import { DEFAULT_CATALOG_WINDOW_MS, listedToolNames } from './catalog/tool-catalog.ts';
import type { Database } from './schema.ts';

/**
 * The database-wide figures /metrics reports (taskgate_tasks, taskgate_queue_depth, outbox and
 * reconciliation gauges): counts only, each on a partial index, so a scrape costs the size of
 * what is live, never of the history. Read-only, over tables other modules own.
 */
export interface MetricsSnapshot {
  readonly liveTasks: { state: string; tool: string; count: number }[];
  readonly queued: { tool: string; count: number; oldestSeconds: number }[];
  readonly outboxPending: number;
  readonly outboxDead: number;
  readonly reconciliationOpen: { kind: string; count: number }[];
  /** The tools the catalog lists: each has a series in the per-tool gauges, 0 when it has no task. */
  readonly tools: string[];
}

/** A scrape must not hang on a database that is slow: past this it reports the database down. */
const SNAPSHOT_TIMEOUT_MS = 2_000;

export async function readMetricsSnapshot(db: Kysely<Database>): Promise<MetricsSnapshot> {
  return db.transaction().execute(async (tx) => {
    await sql`SET LOCAL statement_timeout = ${sql.lit(SNAPSHOT_TIMEOUT_MS)}`.execute(tx);
    const { rows } = await sql<{
      live: { state: string; tool: string; count: number }[];
      queued: { tool: string; count: number; oldest_seconds: number }[];
      outbox_pending: number;
      outbox_dead: number;
      reconciliation: { kind: string; count: number }[];
    }>`
      SELECT
        (SELECT coalesce(json_agg(l), '[]') FROM (
           SELECT status AS state, tool, count(*)::int AS count FROM tasks
           WHERE status IN ('working', 'input_required') GROUP BY status, tool) l) AS live,
        -- Never claimed: attempt 0 (a handed-back task waits too, but has run; it is in taskgate_tasks).
        (SELECT coalesce(json_agg(q), '[]') FROM (
           SELECT tool, count(*)::int AS count,
                  extract(epoch FROM now() - min(created_at))::float8 AS oldest_seconds
           FROM tasks WHERE status IN ('working', 'input_required') AND worker_id IS NULL AND attempt = 0
           GROUP BY tool) q) AS queued,
        (SELECT count(*)::int FROM outbox WHERE delivered_at IS NULL AND dead_at IS NULL) AS outbox_pending,
        (SELECT count(*)::int FROM outbox WHERE dead_at IS NOT NULL) AS outbox_dead,
        (SELECT coalesce(json_agg(r), '[]') FROM (
           SELECT kind, count(*)::int AS count FROM reconciliation_items WHERE resolved_at IS NULL GROUP BY kind) r)
          AS reconciliation`.execute(tx);
    const row = rows[0];
    if (row === undefined) throw new Error('the metrics snapshot returned no row');
    const tools = await listedToolNames(tx, { windowMs: DEFAULT_CATALOG_WINDOW_MS });
    return {
      liveTasks: row.live,
      queued: row.queued.map((entry) => ({
        tool: entry.tool,
        count: entry.count,
        oldestSeconds: entry.oldest_seconds,
      })),
      outboxPending: row.outbox_pending,
      outboxDead: row.outbox_dead,
      reconciliationOpen: row.reconciliation,
      tools,
    };
  });
}
