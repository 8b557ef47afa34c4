import { type Database, endedToolStatsStatement, openToolCountsStatement } from '@taskgate/db';
import { type Kysely, type RawBuilder, sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { planOf } from '../support/query-plans.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// GET /v1/tools/stats, the console's tools overview: per tool, the tenant's open tasks now and
// what ended in the last hour (counts, run time and cancel latency percentiles, per two-minute
// bucket). The tasks are written straight into the table, with the times each case needs: what is
// counted is decided by those times, not by when the test runs.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
const ACME = 'acme-stats-token-0123456789';
const GLOBEX = 'globex-stats-token-0123456789';

interface Percentiles {
  p50Ms: number | null;
  p99Ms: number | null;
}
interface Counts {
  completed: number;
  failed: number;
  cancelled: number;
  duration: Percentiles;
  cancelLatency: Percentiles;
}
interface ToolStats extends Counts {
  name: string;
  served: boolean;
  queued: number;
  running: number;
  inputRequired: number;
  oldestQueuedAt: string | null;
  buckets: (Counts & { start: string })[];
}
interface Stats {
  now: string;
  since: string;
  bucketMs: number;
  tools: ToolStats[];
}

const stats = async (token = ACME) => {
  const response = await api.app.inject({
    method: 'GET',
    url: '/v1/tools/stats',
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.statusCode, response.body).toBe(200);
  return response.json() as Stats;
};
const tool = (read: Stats, name: string) => {
  const found = read.tools.find((entry) => entry.name === name);
  if (found === undefined) throw new Error(`${name} is not listed: ${read.tools.map((t) => t.name).join(', ')}`);
  return found;
};

/** A task that ended `agoMs` before now, having run `runMs`; cancelled ones were asked `cancelMs` before. */
const ended = (
  db: Kysely<Database>,
  tenant: string,
  name: string,
  status: 'completed' | 'failed' | 'cancelled',
  agoMs: number,
  runMs: number,
  cancelMs: number | null = null,
) =>
  sql`
  INSERT INTO tasks (tenant_id, tool, status, attempt, started_at, finished_at, cancel_requested_at, created_at)
  VALUES (${tenant}, ${name}, ${status}, 1,
          now() - ${agoMs + runMs} * interval '1 millisecond',
          now() - ${agoMs} * interval '1 millisecond',
          CASE WHEN ${cancelMs}::int IS NULL THEN NULL
               ELSE now() - ${agoMs + (cancelMs ?? 0)} * interval '1 millisecond' END,
          now() - ${agoMs + runMs + 1000} * interval '1 millisecond')`.execute(db);

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await startApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

describe('the tools overview', () => {
  it('counts what is open now and what ended in the hour, per tool, with percentiles', async () => {
    // One transaction, so one now(): the five minutes ago of every row is the same instant, and
    // the rows cannot straddle a bucket's edge.
    await platform.db.transaction().execute(async (trx) => {
      // Ended five minutes ago: three completed (100, 200, 300 ms), one failed (1 s), two cancelled
      // 50 ms and 250 ms after they were asked.
      for (const run of [100, 200, 300]) await ended(trx, 'acme', 'stats_a', 'completed', 5 * 60_000, run);
      await ended(trx, 'acme', 'stats_a', 'failed', 5 * 60_000, 1_000);
      await ended(trx, 'acme', 'stats_a', 'cancelled', 5 * 60_000, 400, 50);
      await ended(trx, 'acme', 'stats_a', 'cancelled', 5 * 60_000, 400, 250);
      // Ended two hours ago: outside the window. Another tenant's: never counted here.
      await ended(trx, 'acme', 'stats_a', 'completed', 2 * 3_600_000, 10);
      await ended(trx, 'globex', 'stats_a', 'failed', 60_000, 10);
      // Open: two queued (the older created a minute ago), one running, one waiting for input.
      await sql`
        INSERT INTO tasks (tenant_id, tool, status, attempt, started_at, input_requests, created_at) VALUES
        ('acme', 'stats_a', 'working', 0, NULL, NULL, now() - interval '60 seconds'),
        ('acme', 'stats_a', 'working', 0, NULL, NULL, now() - interval '10 seconds'),
        ('acme', 'stats_a', 'working', 1, now(), NULL, now() - interval '5 seconds'),
        ('acme', 'stats_a', 'input_required', 1, now(), '{}', now() - interval '5 seconds'),
        ('globex', 'stats_a', 'working', 0, NULL, NULL, now() - interval '1 hour')`.execute(trx);
    });

    const read = await stats();
    const a = tool(read, 'stats_a');
    expect(a).toMatchObject({
      served: false,
      queued: 2,
      running: 1,
      inputRequired: 1,
      completed: 3,
      failed: 1,
      cancelled: 2,
    });
    const oldest = Date.parse(a.oldestQueuedAt ?? '');
    expect(Date.parse(read.now) - oldest).toBeGreaterThanOrEqual(60_000);
    expect(Date.parse(read.now) - oldest).toBeLessThan(61_000);
    // Run time over all six ended in the window: 100, 200, 300, 400, 400, 1000.
    expect(a.duration).toEqual({ p50Ms: 350, p99Ms: 970 });
    expect(a.cancelLatency).toEqual({ p50Ms: 150, p99Ms: 248 });

    // Thirty two-minute buckets, the last the current one; all six in the bucket five minutes ago.
    expect(read.bucketMs).toBe(120_000);
    expect(a.buckets).toHaveLength(30);
    expect(Date.parse(a.buckets[0]?.start ?? '')).toBe(Date.parse(read.since));
    expect(Date.parse(read.now) - Date.parse(a.buckets[29]?.start ?? '')).toBeLessThan(120_000);
    const { rows } = await sql<{ at: Date }>`
      SELECT finished_at AS at FROM tasks WHERE tenant_id = 'acme' AND status = 'failed'`.execute(platform.db);
    const fiveAgo = (rows[0] as { at: Date }).at.getTime();
    const holding = a.buckets.filter((bucket) => bucket.completed + bucket.failed + bucket.cancelled > 0);
    expect(holding).toHaveLength(1);
    const [only] = holding;
    expect(Date.parse(only?.start ?? '')).toBeLessThanOrEqual(fiveAgo);
    expect(Date.parse(only?.start ?? '') + 120_000).toBeGreaterThan(fiveAgo);
    expect(only).toMatchObject({ completed: 3, failed: 1, cancelled: 2, duration: a.duration });

    // A tool served with no task is listed with zeros and empty buckets.
    const greet = tool(read, 'greet');
    expect(greet).toMatchObject({ served: true, queued: 0, completed: 0, duration: { p50Ms: null, p99Ms: null } });
    expect(greet.buckets).toHaveLength(30);

    // The other tenant sees its own tasks only.
    const other = tool(await stats(GLOBEX), 'stats_a');
    expect(other).toMatchObject({ queued: 1, running: 0, completed: 0, failed: 1, cancelled: 0 });
  });

  it('asks for a token like every /v1 route', async () => {
    const response = await api.app.inject({ method: 'GET', url: '/v1/tools/stats' });
    expect(response.statusCode).toBe(401);
  });
});

describe('the plans of the overview', () => {
  const plan = (statement: RawBuilder<unknown>) => planOf(platform.db, statement);

  it('reads only what is open and what ended in the window, on a table of 300,000 tasks', {
    timeout: 90_000,
  }, async () => {
    // 30 days of history for one tenant, most of it ended long ago; one in a hundred still open.
    await sql`
      INSERT INTO tasks (tenant_id, tool, status, started_at, finished_at, created_at)
      SELECT 'bulk', 'tool_' || (g % 20),
             CASE WHEN g % 100 = 0 THEN 'working' ELSE 'completed' END,
             now() - make_interval(secs => g * 8.64),
             CASE WHEN g % 100 = 0 THEN NULL ELSE now() - make_interval(secs => g * 8.64) END,
             now() - make_interval(secs => g * 8.64)
      FROM generate_series(1, 300000) AS g`.execute(platform.db);
    await sql`ANALYZE tasks`.execute(platform.db);
    const since = new Date(Date.now() - 3_600_000);
    const endedPlan = await plan(endedToolStatsStatement('bulk', { since, until: new Date(), bucketMs: 120_000 }));
    expect(endedPlan.nodes).not.toContain('Seq Scan');
    expect(endedPlan.indexes).toContain('tasks_tenant_finished_idx');
    const openPlan = await plan(openToolCountsStatement('bulk'));
    expect(openPlan.nodes).not.toContain('Seq Scan');
    expect(openPlan.indexes).toContain('tasks_tenant_status_created_idx');
  });
});
