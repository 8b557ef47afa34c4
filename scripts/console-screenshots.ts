// Screenshots of every console page, light and dark, into docs/console/ (the README shows them):
//   BENCH_DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres node scripts/console-screenshots.ts
// On a scratch database (dropped afterwards): a worker runs the demo tools, a few tasks are started
// so that each page has something to show — running with progress, completed, failed, cancelled —
// and Chromium (/usr/bin/chromium, or CHROMIUM_PATH) photographs the pages at 1280 x 900.
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { addOutboxEvents, openReconciliationItem } from '@taskgate/db';
import { sql } from 'kysely';
import { benchDatabase } from '../bench/support/bench-database.ts';
import { launchChromium } from '../test/support/browser.ts';
import { serveApi, startPlatform, waitForTask } from '../test/support/task-platform.ts';

const OUT = fileURLToPath(new URL('../docs/console/', import.meta.url));
const database = await benchDatabase();
const platform = await startPlatform(database.url);
await platform.startWorker();
const api = await serveApi(platform, database.url, { events: { pollMs: 200, keepaliveMs: 15_000 } });
const OPERATOR = 'operator-screenshot-token-0123';
const signIn = await serveApi(platform, database.url, {
  tokens: new Map([['acme-screenshot-token-0123', 'acme']]),
  operatorTokens: new Set([OPERATOR]),
});
const origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
const signInOrigin = `http://127.0.0.1:${(signIn.app.server.address() as AddressInfo).port}`;
const browser = await launchChromium();
try {
  const tenant = 'default';
  const finished = await platform.service.create(tenant, { tool: 'greet', arguments: { name: 'Ada' } });
  const failed = await platform.service.create(tenant, { tool: 'protocol_error_job', arguments: {} });
  const cancelled = await platform.service.create(tenant, { tool: 'slow_compute', arguments: { seconds: 60 } });
  const running = await platform.service.create(tenant, { tool: 'slow_compute', arguments: { seconds: 300 } });
  // Two more running beside these (the worker runs four at once), and a few queued behind them.
  for (let n = 0; n < 5; n += 1) {
    await platform.service.create(tenant, { tool: 'slow_compute', arguments: { seconds: 300, label: `batch ${n}` } });
  }

  await waitForTask(
    () => platform.service.get(tenant, cancelled.id),
    (task) => task.progress !== null,
  );
  await platform.service.cancel(tenant, cancelled.id, 'not needed any more', { signal: 'rest_cancel' });
  for (const id of [finished.id, cancelled.id, failed.id]) {
    await waitForTask(
      () => platform.service.get(tenant, id),
      (task) => task.finishedAt !== null,
    );
  }
  await waitForTask(
    () => platform.service.get(tenant, running.id),
    (task) => (task.progress?.value ?? 0) > 40,
  );
  // An item for the reconciliation pages, as a lost attempt of a charge would leave it.
  const charge = await platform.service.create(tenant, {
    tool: 'charge_account',
    arguments: { account: 'acct-7', cents: 1200, idempotencyKey: 'checkout-7' },
  });
  await platform.service.cancel(tenant, charge.id, null, { signal: 'rest_cancel' });
  await openReconciliationItem(platform.db, charge.id, 'attempt 1 was lost after the charge was sent');
  const item = await sql<{ id: string }>`
    SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${charge.id}::uuid`.execute(platform.db);
  // An hour of history for the tools overview's charts, as a busy hour would leave it: greet ends
  // often and fast, slow_compute seldom and slowly, with a few failures and cancels among them.
  await sql`
    INSERT INTO tasks (tenant_id, tool, status, attempt, started_at, finished_at, cancel_requested_at, created_at)
    SELECT ${tenant}, tool, status, 1, ended - run, ended,
           CASE WHEN status = 'cancelled' THEN ended - interval '180 milliseconds' END, ended - run - interval '2 seconds'
    FROM (
      SELECT CASE WHEN g % 5 = 0 THEN 'slow_compute' ELSE 'greet' END AS tool,
             CASE WHEN g % 37 = 0 THEN 'failed' WHEN g % 5 = 0 AND g % 3 = 0 THEN 'cancelled' ELSE 'completed' END
               AS status,
             now() - make_interval(secs => 3600 * (g / 1200.0) ^ 1.3) AS ended,
             CASE WHEN g % 5 = 0 THEN make_interval(secs => 20 + (g % 40)) ELSE make_interval(secs => 0.02 + (g % 9) / 100.0) END
               AS run
      FROM generate_series(1, 1200) AS g
    ) AS history`.execute(platform.db);
  // Other tenants, for an operator's choice of tenant.
  await sql`
    INSERT INTO tasks (tenant_id, tool, status, attempt, started_at, finished_at)
    SELECT name, 'greet', 'completed', 1, now(), now()
    FROM unnest(array['acme', 'globex', 'initech', 'umbrella-eu', 'umbrella-us']) AS name`.execute(platform.db);
  // For the outbox page: an event the relay gave up on, as its last failed attempt leaves it (no
  // relay runs here, so the charge's own events stay pending beside it).
  const [dead] = await addOutboxEvents(platform.db, [
    {
      tenantId: tenant,
      aggregateType: 'account',
      aggregateId: 'acct-9',
      eventType: 'account.charged',
      payload: { account: 'acct-9', cents: 4200 },
    },
  ]);
  await sql`
    UPDATE outbox SET attempts = 10, leased_by = 'relay-1a2b3c4d', dead_at = now(),
      last_error = 'HTTP 503 Service Unavailable (https://hooks.example.com/taskgate)'
    WHERE id = ${dead}::bigint`.execute(platform.db);
  const pages: [string, string, string][] = [
    ['tasks', `${origin}/ui`, 'tbody tr'],
    ['task-running', `${origin}/ui/tasks/${running.id}`, 'ol.timeline li'],
    ['task-cancelled', `${origin}/ui/tasks/${cancelled.id}`, 'text=Cancel observed by the worker'],
    ['task-failed', `${origin}/ui/tasks/${failed.id}`, 'ol.timeline li'],
    ['tools', `${origin}/ui/tools`, 'tr[data-tool="greet"]'],
    ['catalog', `${origin}/ui/catalog`, 'section[data-tool="greet"]'],
    ['workers', `${origin}/ui/workers`, 'tbody tr'],
    ['reconciliation', `${origin}/ui/reconciliation`, 'tbody tr'],
    ['reconciliation-item', `${origin}/ui/reconciliation/${item.rows[0]?.id}`, 'h2'],
    ['outbox', `${origin}/ui/outbox`, 'table.outbox-events tbody tr'],
    ['login', `${signInOrigin}/ui/login`, 'h1'],
    ['tenants', `${signInOrigin}/ui/tenants`, 'ul.tenant-list li'],
  ];
  for (const colorScheme of ['light', 'dark'] as const) {
    for (const [name, url, ready] of pages) {
      const context = await browser.newContext({ colorScheme, viewport: { width: 1280, height: 900 } });
      const page = await context.newPage();
      if (name === 'tenants') {
        // An operator's choice of tenant: signed in with an operator token first.
        await page.goto(`${signInOrigin}/ui/login?next=%2Fui%2Ftenants`);
        await page.getByLabel('Token').fill(OPERATOR);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(url);
      }
      await page.goto(url);
      await page.locator(ready).first().waitFor();
      const file = path.join(OUT, `${name}-${colorScheme}.png`);
      await page.screenshot({ path: file, fullPage: name !== 'tasks' && name !== 'catalog' });
      console.log(path.relative(process.cwd(), file));
      await context.close();
    }
  }
} finally {
  await browser.close();
  await signIn.close();
  await api.close();
  await platform.stop();
  await database.drop();
}
