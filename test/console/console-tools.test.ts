import type { AddressInfo } from 'node:net';
import { publishTools, registerInstance } from '@taskgate/db';
import { toolCatalogEntry } from '@taskgate/reliability';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { restScopeOf } from '../../apps/api/src/http/oauth/scopes.ts';
import { seriousViolations } from '../support/browser.ts';
import { useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// The tools overview (/ui/tools, GET /v1/tools/stats) and the catalog (/ui/catalog, GET /v1/tools
// and the slots each worker publishes) in Chromium, on the open loopback server.
const database = useTestDatabase();
let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const { open, closePage } = useConsoleBrowser(() => origin);

beforeAll(async () => {
  platform = await startPlatform(database.url);
  // No sweeper here: stats_only's task is inserted without a queue job, and the sweeper's first
  // full pass (failWithoutLiveJob) fails such a task, so whether the page saw it queued depended
  // on whether that pass ran before the read.
  await platform.startWorker({ concurrency: 6, toolConcurrency: new Map([['slow_compute', 2]]), sweep: false });
  api = await serveApi(platform, database.url, { mcp: { loopbackOnly: true } });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  // What the overview shows for greet: four completed and one failed ten minutes ago, one queued.
  await sql`
    INSERT INTO tasks (tenant_id, tool, status, attempt, started_at, finished_at, created_at)
    SELECT 'default', 'greet', CASE WHEN g = 5 THEN 'failed' ELSE 'completed' END, 1,
           now() - interval '10 minutes' - g * interval '100 milliseconds', now() - interval '10 minutes',
           now() - interval '11 minutes'
    FROM generate_series(1, 5) AS g`.execute(platform.db);
  await sql`
    INSERT INTO tasks (tenant_id, tool, status, attempt, created_at)
    VALUES ('default', 'stats_only', 'working', 0, now() - interval '90 seconds')`.execute(platform.db);
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
});

describe('the tools overview', () => {
  it('shows each tool with its counts and charts, and leads to its tasks', async () => {
    const page = await open('/ui/tools');
    const greet = page.locator('tr[data-tool="greet"]');
    await greet.waitFor();
    expect(await greet.locator('[data-field="completed"]').textContent()).toBe('4');
    expect(await greet.locator('[data-field="failed"]').textContent()).toBe('1');
    expect(await greet.locator('[data-field="duration"]').textContent()).toBe('300 ms / 496 ms');
    const ended = greet.getByRole('img', { name: /4 completed, 1 failed, 0 cancelled/ });
    expect(await ended.count()).toBe(1);
    // One bucket holds all five: one bar of two parts.
    expect(await ended.locator('rect').count()).toBe(2);
    expect(await greet.getByRole('img', { name: /^Run time per 2 minutes/ }).count()).toBe(1);

    // A tool no worker serves but whose tasks remain: listed, marked, with its queued task's age.
    const only = page.locator('tr[data-tool="stats_only"]');
    await only.getByText('not served').waitFor();
    expect(await only.locator('[data-field="queued"]').textContent()).toBe('1');
    expect(await only.locator('[data-field="oldestQueued"]').textContent()).toMatch(/^1 min 3\d s$/);

    await greet.getByRole('link', { name: 'greet' }).click();
    await page.waitForURL(`${origin}/ui?tool=greet`);
    await page.locator('tbody tr').first().waitFor();
  });

  it('counts tasks, so it takes the tasks scope', () => {
    expect(restScopeOf('GET', '/v1/tools/stats')).toBe('tasks');
    expect(restScopeOf('GET', '/v1/tools')).toBe('tools');
  });
});

describe('the catalog', () => {
  it('shows every tool with its settings, schemas and the workers serving it with their slots', async () => {
    const page = await open('/ui/catalog');
    const slow = page.locator('section[data-tool="slow_compute"]');
    await slow.waitFor();
    await slow.getByText('ends it when no progress comes for 5 s').waitFor();
    await slow.getByText(/^safe — /).waitFor();
    const served = slow.locator('ul.tool-list li');
    expect(await served.count()).toBe(1);
    expect(await served.textContent()).toContain('2 at once');
    expect(await page.locator('section[data-tool="greet"] ul.tool-list li').textContent()).toContain('6 at once');

    // The schema opens by keyboard and stays open across the page's refresh.
    const summary = slow.getByText('Input schema');
    await summary.focus();
    await page.keyboard.press('Enter');
    await slow.getByLabel('Input schema of slow_compute').waitFor();

    // The index moves within the page: the page is not drawn again (the open schema stays).
    await page.evaluate('document.querySelector(\'section[data-tool="slow_compute"]\').dataset.mark = "kept"');
    await page.getByRole('navigation', { name: 'Tools in the catalog' }).getByRole('link', { name: 'greet' }).click();
    await page.waitForURL(`${origin}/ui/catalog#tool-greet`);
    expect(await page.locator('section[data-tool="slow_compute"][data-mark="kept"]').count()).toBe(1);
  });

  it('publishes the slots with the definition, and refuses slots that are not a positive integer', async () => {
    await registerInstance(platform.db, { id: 'worker-slots', kind: 'worker', host: 'h', pid: 1 });
    const entry = toolCatalogEntry({ name: 'slotted', description: 'd', inputSchema: { type: 'object' } });
    expect(await publishTools(platform.db, 'worker-slots', [{ ...entry, concurrency: 3 }])).toMatchObject({ added: 1 });
    const before = await sql<{ published_at: Date; concurrency: number }>`
      SELECT published_at, concurrency FROM tool_catalog WHERE instance_id = 'worker-slots'`.execute(platform.db);
    // Other slots, the same definition: a change of the row, not of the version it serves.
    expect(await publishTools(platform.db, 'worker-slots', [{ ...entry, concurrency: 5 }])).toMatchObject({
      changed: 1,
    });
    const after = await sql<{ published_at: Date; concurrency: number }>`
      SELECT published_at, concurrency FROM tool_catalog WHERE instance_id = 'worker-slots'`.execute(platform.db);
    expect(after.rows[0]?.concurrency).toBe(5);
    expect(after.rows[0]?.published_at).toEqual(before.rows[0]?.published_at);
    expect(await publishTools(platform.db, 'worker-slots', [{ ...entry, concurrency: 5 }])).toMatchObject({
      unchanged: 1,
    });
    for (const concurrency of [0, -1, 1.5, Number.NaN]) {
      await expect(publishTools(platform.db, 'worker-slots', [{ ...entry, concurrency }])).rejects.toThrow(
        /concurrency must be a positive integer/,
      );
    }
    // A worker from before the column says nothing: null, shown as not reported.
    await publishTools(platform.db, 'worker-slots', [entry]);
    const older = await sql<{ concurrency: number | null }>`
      SELECT concurrency FROM tool_catalog WHERE instance_id = 'worker-slots'`.execute(platform.db);
    expect(older.rows[0]?.concurrency).toBeNull();
  });
});

describe('both pages', () => {
  it('have no serious or critical accessibility violation, light and dark, at 1024 px', {
    timeout: 60_000,
  }, async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const [path, ready] of [
        ['/ui/tools', 'tr[data-tool="greet"]'],
        ['/ui/catalog', 'section[data-tool="greet"]'],
      ] as const) {
        const page = await open(path, { colorScheme, viewport: { width: 1024, height: 768 } });
        await page.locator(ready).waitFor();
        expect(await seriousViolations(page), `${path} (${colorScheme})`).toEqual([]);
        expect(await page.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(1024);
        await closePage();
      }
    }
  });
});
