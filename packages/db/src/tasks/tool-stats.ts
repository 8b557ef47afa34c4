import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.ts';

/**
 * The console's tools overview: per tool of a tenant, what is open now and what ended in a recent
 * window, with the window cut into equal buckets for its charts. Two reads, each bounded by an
 * index: the open tasks (tasks_tenant_status_created_idx, open tasks are few), and the tasks that
 * ended inside the window (tasks_tenant_finished_idx, migration 0026). Times are the database's.
 */

type Db = Kysely<Database>;

export interface OpenToolCounts {
  readonly tool: string;
  /** Working and not yet started by any worker. */
  readonly queued: number;
  /** Working, started by a worker. */
  readonly running: number;
  readonly inputRequired: number;
  /** When the oldest queued task was created; null when none is queued. */
  readonly oldestQueuedAt: Date | null;
}

/** Percentiles of a set of durations in milliseconds; null when the set is empty. */
export interface DurationPercentiles {
  readonly p50Ms: number | null;
  readonly p99Ms: number | null;
}

export interface EndedCounts {
  readonly completed: number;
  readonly failed: number;
  readonly cancelled: number;
  /** From a worker's start to the end (the run, without the wait in the queue). */
  readonly duration: DurationPercentiles;
  /** From the cancel request to the cancelled end: how long the checkpoint took to come. */
  readonly cancelLatency: DurationPercentiles;
}

export interface EndedToolStats extends EndedCounts {
  readonly tool: string;
  /** The window's buckets, oldest first, each with the same counts; every bucket is present. */
  readonly buckets: readonly (EndedCounts & { readonly start: Date })[];
}

export interface ToolStatsWindow {
  readonly bucketMs: number;
  readonly buckets: number;
}

export interface ToolStats {
  /** The database's clock when read. */
  readonly now: Date;
  /** The window's start: the start of its first bucket (buckets align to multiples of bucketMs). */
  readonly since: Date;
  readonly bucketMs: number;
  readonly open: readonly OpenToolCounts[];
  readonly ended: readonly EndedToolStats[];
}

interface EndedRow {
  tool: string;
  bucket: Date | null;
  completed: number;
  failed: number;
  cancelled: number;
  run_p50: number | null;
  run_p99: number | null;
  cancel_p50: number | null;
  cancel_p99: number | null;
}

export async function readToolStats(db: Db, tenantId: string, window: ToolStatsWindow): Promise<ToolStats> {
  if (!Number.isInteger(window.bucketMs) || window.bucketMs < 1_000) throw new RangeError('bucketMs: at least 1000');
  if (!Number.isInteger(window.buckets) || window.buckets < 1 || window.buckets > 500) {
    throw new RangeError('buckets: 1 to 500');
  }
  return db.transaction().execute(async (trx) => {
    // One snapshot for both reads and the clock: a task ending between them is counted once.
    await sql`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY`.execute(trx);
    const { rows: clock } = await sql<{ now: Date; since: Date }>`
      SELECT now() AS now,
             date_bin(${window.bucketMs}::int * interval '1 millisecond', now(), timestamptz 'epoch')
               - ${(window.buckets - 1) * window.bucketMs}::bigint * interval '1 millisecond' AS since`.execute(trx);
    const { now, since } = clock[0] as { now: Date; since: Date };
    const { rows: open } = await openToolCountsStatement(tenantId).execute(trx);
    const { rows: ended } = await endedToolStatsStatement(tenantId, {
      since,
      until: now,
      bucketMs: window.bucketMs,
    }).execute(trx);
    return {
      now,
      since,
      bucketMs: window.bucketMs,
      open: open.map((row) => ({
        tool: row.tool,
        queued: row.queued,
        running: row.running,
        inputRequired: row.input_required,
        oldestQueuedAt: row.oldest_queued_at,
      })),
      ended: endedByTool(ended, since, window),
    };
  });
}

/** What is open now, per tool (exported for the test that asserts its plan). */
export function openToolCountsStatement(tenantId: string) {
  return sql<{ tool: string; queued: number; running: number; input_required: number; oldest_queued_at: Date | null }>`
    SELECT tool,
           count(*) FILTER (WHERE status = 'working' AND started_at IS NULL)::int AS queued,
           count(*) FILTER (WHERE status = 'working' AND started_at IS NOT NULL)::int AS running,
           count(*) FILTER (WHERE status = 'input_required')::int AS input_required,
           min(created_at) FILTER (WHERE status = 'working' AND started_at IS NULL) AS oldest_queued_at
    FROM tasks
    WHERE tenant_id = ${tenantId} AND status IN ('working', 'input_required')
    GROUP BY tool
    ORDER BY tool COLLATE "C"`;
}

/**
 * What ended in [since, until], per tool: the window's totals (bucket NULL) and each bucket's, in
 * one pass (GROUPING SETS). `until` is the clock read with the snapshot: a task another
 * transaction ended after it falls in no bucket. Exported for the test that asserts its plan.
 */
export function endedToolStatsStatement(
  tenantId: string,
  window: { readonly since: Date; readonly until: Date; readonly bucketMs: number },
) {
  return sql<EndedRow>`
    WITH ended AS (
      SELECT tool, status,
             date_bin(${window.bucketMs}::int * interval '1 millisecond', finished_at, ${window.since}::timestamptz) AS bucket,
             extract(epoch FROM finished_at - started_at) * 1000 AS run_ms,
             CASE WHEN status = 'cancelled'
                  THEN extract(epoch FROM finished_at - cancel_requested_at) * 1000 END AS cancel_ms
      FROM tasks
      WHERE tenant_id = ${tenantId} AND finished_at IS NOT NULL
        AND finished_at >= ${window.since}::timestamptz AND finished_at <= ${window.until}::timestamptz
    )
    SELECT tool, bucket,
           count(*) FILTER (WHERE status = 'completed')::int AS completed,
           count(*) FILTER (WHERE status = 'failed')::int AS failed,
           count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY run_ms) AS run_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY run_ms) AS run_p99,
           percentile_cont(0.5) WITHIN GROUP (ORDER BY cancel_ms) AS cancel_p50,
           percentile_cont(0.99) WITHIN GROUP (ORDER BY cancel_ms) AS cancel_p99
    FROM ended
    GROUP BY GROUPING SETS ((tool), (tool, bucket))
    ORDER BY tool COLLATE "C", bucket NULLS FIRST`;
}

function endedByTool(rows: readonly EndedRow[], since: Date, window: ToolStatsWindow): EndedToolStats[] {
  const tools = new Map<string, { totals: EndedCounts; buckets: Map<number, EndedCounts> }>();
  for (const row of rows) {
    const entry = tools.get(row.tool) ?? { totals: emptyCounts(), buckets: new Map() };
    tools.set(row.tool, entry);
    const counts: EndedCounts = {
      completed: row.completed,
      failed: row.failed,
      cancelled: row.cancelled,
      duration: { p50Ms: rounded(row.run_p50), p99Ms: rounded(row.run_p99) },
      cancelLatency: { p50Ms: rounded(row.cancel_p50), p99Ms: rounded(row.cancel_p99) },
    };
    if (row.bucket === null) entry.totals = counts;
    else entry.buckets.set(row.bucket.getTime(), counts);
  }
  return [...tools].map(([tool, { totals, buckets }]) => ({
    tool,
    ...totals,
    buckets: Array.from({ length: window.buckets }, (_, index) => {
      const start = new Date(since.getTime() + index * window.bucketMs);
      return { start, ...(buckets.get(start.getTime()) ?? emptyCounts()) };
    }),
  }));
}

function emptyCounts(): EndedCounts {
  return {
    completed: 0,
    failed: 0,
    cancelled: 0,
    duration: { p50Ms: null, p99Ms: null },
    cancelLatency: { p50Ms: null, p99Ms: null },
  };
}

/** percentile_cont answers double precision, which pg hands over as a number. */
function rounded(value: number | null): number | null {
  return value === null ? null : Math.round(Number(value));
}
