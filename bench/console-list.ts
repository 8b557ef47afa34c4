// The console's tasks page on a big database: 2,000,000 tasks (TASKS) of one tenant, spread over 50
// tools and 30 days, mostly finished, a tenth of them with an idempotency key. Measured: the list
// query as the page asks for it (GET /v1/tasks, one page of 100, unfiltered, by status, by tool, by
// both, by time, a page deep down, and the two searches), SAMPLES sequential requests each, from
// writing the request to the last byte; and the page's first meaningful paint in Chromium (from
// navigation start to the `taskgate:tasks-painted` mark the page sets after its first page of rows
// is painted, a new browser context each time, so nothing is cached). The anchor is the same page
// and the same queries on an empty database, in the same run. The API runs without its sweeper:
// the seeded working tasks have no worker, and recovering them is not what is measured.
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npm run bench -- console-list

import pg from 'pg';
import { launchChromium } from '../test/support/browser.ts';
import { startLoopbackApi } from '../test/support/task-platform.ts';
import { benchDatabase } from './support/bench-database.ts';
import { below, figure, printTable, reportGoals, summary } from './support/report.ts';

const TASKS = Number(process.env.TASKS ?? 2_000_000);
const SAMPLES = Number(process.env.SAMPLES ?? 40);
const PAINTS = Number(process.env.PAINTS ?? 10);
const ROUNDS = Number(process.env.ROUNDS ?? 20);
const ROUND_MS = Number(process.env.ROUND_MS ?? 250);
const CHUNK = 250_000;
const rows: Record<string, string | number>[] = [];
/** The 1,000-row page's figures, a table of their own (other columns). */
const updateRows: Record<string, string | number>[] = [];

/** Seeds `count` tasks of tenant "default" (the open server's), printing progress per chunk. */
async function seed(url: string, count: number): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const started = Date.now();
    for (let from = 0; from < count; from += CHUNK) {
      const to = Math.min(count, from + CHUNK);
      // Created over the last 30 days, oldest first; one in ten still working, the rest completed.
      await client.query(
        `INSERT INTO tasks (tenant_id, tool, arguments, status, result, finished_at, started_at, attempt,
                            idempotency_key, created_at)
         SELECT 'default', 'tool_' || (g % 50), jsonb_build_object('n', g),
                CASE WHEN g % 10 = 0 THEN 'working' ELSE 'completed' END,
                CASE WHEN g % 10 = 0 THEN NULL ELSE jsonb_build_object('ok', true) END,
                CASE WHEN g % 10 = 0 THEN NULL ELSE now() END, now(), 1,
                CASE WHEN g % 10 = 3 THEN 'key-' || g END,
                now() - make_interval(secs => ($3::float8 - g) * (30 * 86400.0 / $3::float8))
         FROM generate_series($1::int, $2::int) AS g`,
        [from + 1, to, count],
      );
      process.stdout.write(
        `  seeded ${to.toLocaleString('en')} of ${count.toLocaleString('en')} tasks (${Math.round((Date.now() - started) / 1000)} s)\n`,
      );
    }
    await client.query(
      `INSERT INTO idempotency_keys (tenant_id, key, operation, fingerprint, state, task_id, completed_at, expires_at)
       SELECT tenant_id, idempotency_key, 'tasks', repeat('0', 64), 'completed', id, now(), now() + interval '1 day'
       FROM tasks WHERE idempotency_key IS NOT NULL`,
    );
    // Statistics and the visibility map, as autovacuum leaves a table that has been there a while.
    await client.query('VACUUM ANALYZE tasks');
    await client.query('VACUUM ANALYZE idempotency_keys');
  } finally {
    await client.end();
  }
}

/** Query strings of the page's reads: what the filters, a deep page and the searches send. */
async function queries(origin: string): Promise<[string, string][]> {
  const first = (await (await fetch(`${origin}/v1/tasks?limit=100`)).json()) as {
    tasks: { id: string }[];
    nextCursor: string | null;
  };
  // A page far down: follow the cursor 20 pages (2,000 tasks) deep.
  let cursor = first.nextCursor;
  for (let page = 0; page < 19 && cursor !== null; page += 1) {
    const next = (await (await fetch(`${origin}/v1/tasks?limit=100&cursor=${encodeURIComponent(cursor)}`)).json()) as {
      nextCursor: string | null;
    };
    cursor = next.nextCursor;
  }
  const someId = first.tasks[0]?.id ?? '00000000-0000-4000-8000-000000000000';
  const hourAgo = new Date(Date.now() - 3_600_000).toISOString();
  return [
    ['newest 100', 'limit=100'],
    ['by status (working)', 'limit=100&status=working'],
    ['by tool', 'limit=100&tool=tool_7'],
    ['by tool and status', 'limit=100&tool=tool_7&status=working'],
    ['created in the last hour', `limit=100&createdAfter=${hourAgo}`],
    ['page 21 (2,000 deep)', `limit=100${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`],
    ['search by id', `limit=100&id=${someId}`],
    // One of the keyed tasks (g % 10 = 3), half-way through the table.
    ['search by idempotency key', `limit=100&idempotencyKey=key-${3 + 10 * Math.floor(TASKS / 20)}`],
  ];
}

async function timeQuery(origin: string, query: string): Promise<{ p50: number; p99: number; rows: number }> {
  let count = 0;
  for (let warm = 0; warm < 3; warm += 1) await (await fetch(`${origin}/v1/tasks?${query}`)).text();
  const samples: number[] = [];
  for (let sample = 0; sample < SAMPLES; sample += 1) {
    const started = performance.now();
    const response = await fetch(`${origin}/v1/tasks?${query}`);
    const body = (await response.json()) as { tasks: unknown[] };
    samples.push(performance.now() - started);
    if (response.status !== 200) throw new Error(`GET /v1/tasks?${query} answered ${response.status}`);
    count = body.tasks.length;
  }
  const { p50, p99 } = summary(samples);
  return { p50, p99, rows: count };
}

async function timePaint(origin: string): Promise<{ p50: number; p99: number; shellP50: number }> {
  const browser = await launchChromium();
  try {
    const samples: number[] = [];
    const shell: number[] = [];
    for (let sample = 0; sample < PAINTS + 1; sample += 1) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${origin}/ui`);
      const painted = await page.waitForFunction(
        () => performance.getEntriesByName('taskgate:tasks-painted')[0]?.startTime ?? null,
        undefined,
        { timeout: 30_000 },
      );
      const at = (await painted.jsonValue()) as number;
      // The browser's own first paint of the page (the shell, before any data): this machine's floor.
      const contentful = (await page.evaluate(
        () => performance.getEntriesByName('first-contentful-paint')[0]?.startTime ?? Number.NaN,
      )) as number;
      if (sample > 0) {
        samples.push(at); // the first warms the server's and the browser's caches
        shell.push(contentful);
      }
      await context.close();
    }
    const { p50, p99 } = summary(samples);
    return { p50, p99, shellP50: summary(shell).p50 };
  } finally {
    await browser.close();
  }
}

async function measure(label: string, count: number) {
  const database = await benchDatabase();
  try {
    if (count > 0) await seed(database.url, count);
    else await database.analyze();
    const api = await startLoopbackApi(database.url, { sweep: false });
    try {
      const origin = new URL(api.url).origin;
      for (const [name, query] of await queries(origin)) {
        const timed = await timeQuery(origin, query);
        rows.push({ path: `${label}: list, ${name}`, rows: timed.rows, 'p50 ms': timed.p50, 'p99 ms': timed.p99 });
      }
      const paint = await timePaint(origin);
      rows.push({
        path: `${label}: tasks page, first meaningful paint`,
        rows: '',
        'p50 ms': paint.p50,
        'p99 ms': paint.p99,
      });
      rows.push({
        path: `${label}: the browser's own first contentful paint (the shell, no data)`,
        rows: '',
        'p50 ms': paint.shellP50,
        'p99 ms': '',
      });
    } finally {
      await api.stop();
    }
  } finally {
    await database.drop();
  }
}

/**
 * A page of 1,000 working tasks whose progress changes ROUNDS times, every task each time, a
 * round every ROUND_MS (each round one UPDATE of the 1,000 rows and their 1,000 progress
 * notifications, as the workers' announcers send them): 4,000 row changes a second by default. Measured in the page: the longest
 * main-thread task (PerformanceObserver 'longtask', which reports tasks over 50 ms; none: under
 * 50), the 99th percentile of the interval between animation frames, and how long after the last
 * round every row shows it.
 */
async function measureUpdates(): Promise<void> {
  const database = await benchDatabase();
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO tasks (tenant_id, tool, status, started_at, attempt, progress_value, progress_total, created_at)
       SELECT 'default', 'slow_compute', 'working', now(), 1, 0, $1, now() - make_interval(secs => g)
       FROM generate_series(1, 1000) AS g`,
      [ROUNDS],
    );
    await database.analyze();
    const api = await startLoopbackApi(database.url, { sweep: false });
    const browser = await launchChromium();
    try {
      const origin = new URL(api.url).origin;
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      await page.goto(`${origin}/ui?limit=1000`);
      await page.waitForFunction(() => performance.getEntriesByName('taskgate:tasks-painted').length > 0);
      await page.locator('tbody tr').nth(999).waitFor();
      await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
      await page.evaluate(`(() => {
        window.longest = 0;
        window.frames = [];
        new PerformanceObserver((list) => {
          for (const entry of list.getEntries()) window.longest = Math.max(window.longest, entry.duration);
        }).observe({ type: 'longtask' });
        let last = performance.now();
        const tick = (now) => { window.frames.push(now - last); last = now; requestAnimationFrame(tick); };
        requestAnimationFrame(tick);
      })()`);
      // The anchor: the same page's frames over a second with nothing changing.
      await page.waitForTimeout(1_000);
      const idleFrames = (await page.evaluate('window.frames.splice(0)')) as number[];
      let lastRoundAt = 0;
      for (let round = 1; round <= ROUNDS; round += 1) {
        // Paced as a fleet reports: each task's progress four times a second.
        if (round > 1) await new Promise((resolve) => setTimeout(resolve, ROUND_MS));
        await client.query(
          `WITH changed AS (
             UPDATE tasks SET progress_value = $1::int, progress_message = 'round ' || $1::int
             WHERE tenant_id = 'default' AND status = 'working' RETURNING id, tenant_id)
           SELECT count(pg_notify('taskgate_task', json_build_object('id', id, 'tenant', tenant_id,
             'event', 'progress', 'status', 'working',
             'progress', json_build_object('value', $1::int, 'total', $2::int, 'message', 'round ' || $1::int))::text))
           FROM changed`,
          [round, ROUNDS],
        );
        lastRoundAt = performance.now();
      }
      // Every row on screen shows the last round: the page has caught up (rows off screen are
      // drawn when they come into view; checked below). A function, not a string: the page's CSP
      // forbids eval, which a string predicate needs.
      type Row = { getBoundingClientRect(): { top: number }; querySelector(selector: string): unknown };
      type Page = { document: { querySelectorAll(selector: string): Iterable<Row> }; innerHeight: number };
      const shownUpTo = (rounds: number) => {
        const view = globalThis as unknown as Page;
        const visible = [...view.document.querySelectorAll('tbody tr')].filter(
          (row) => row.getBoundingClientRect().top < view.innerHeight,
        );
        return visible.length > 0 && visible.every((row) => row.querySelector(`progress[value="${rounds}"]`) !== null);
      };
      await page.waitForFunction(shownUpTo, ROUNDS, { timeout: 60_000, polling: 50 });
      const caughtUpMs = performance.now() - lastRoundAt;
      const { longest, frames } = (await page.evaluate('({ longest: window.longest, frames: window.frames })')) as {
        longest: number;
        frames: number[];
      };
      // A row that was off screen all along shows the last round once scrolled to.
      const last = page.locator('tbody tr').nth(999);
      await last.scrollIntoViewIfNeeded();
      await last.locator(`progress[value="${ROUNDS}"]`).waitFor({ timeout: 10_000 });
      updateRows.push({
        path: `1,000 rows, ${ROUNDS} rounds of 1,000 progress changes`,
        rows: 1000,
        'longest task ms': longest,
        'frame p99 ms': summary(frames).p99,
        'caught up ms': caughtUpMs,
      });
      updateRows.push({
        path: '1,000 rows, nothing changing',
        rows: 1000,
        'longest task ms': '',
        'frame p99 ms': summary(idleFrames).p99,
        'caught up ms': '',
      });
      await context.close();
    } finally {
      await browser.close();
      await api.stop();
    }
  } finally {
    await client.end();
    await database.drop();
  }
}

const big = `${(TASKS / 1_000_000).toLocaleString('en')}M tasks`;
await measure('empty', 0);
await measure(big, TASKS);
await measureUpdates();
printTable(`the console's tasks page: list queries (${SAMPLES} each) and first paint (${PAINTS})`, rows);
printTable('a page of 1,000 working tasks, every row changing', updateRows);
const worstList = (label: string) =>
  Math.max(...rows.filter((row) => String(row.path).startsWith(`${label}: list`)).map((row) => Number(row['p99 ms'])));
reportGoals({ TASKS, SAMPLES, PAINTS, ROUNDS, ROUND_MS }, [
  {
    metric: `tasks page first meaningful paint p99, ${big}`,
    unit: 'ms',
    rule: below(500),
    ours: figure(rows, `${big}: tasks page`, 'p99 ms'),
    anchor: { label: 'the same page, empty database', value: figure(rows, 'empty: tasks page', 'p99 ms') },
  },
  {
    metric: 'frame interval p99, a 1,000-row page while all its rows change',
    unit: 'ms',
    rule: below(50),
    ours: figure(updateRows, `1,000 rows, ${ROUNDS} rounds`, 'frame p99 ms'),
    anchor: {
      label: 'the same page, nothing changing',
      value: figure(updateRows, '1,000 rows, nothing', 'frame p99 ms'),
    },
  },
  {
    metric: `slowest list or search query p99, ${big}`,
    unit: 'ms',
    rule: below(500),
    ours: worstList(big),
    anchor: { label: 'the same queries, empty database', value: worstList('empty') },
  },
]);
process.exit(0);
