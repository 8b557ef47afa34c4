import type { AddressInfo } from 'node:net';
import { CONSOLE_CSP } from '@taskgate/api';
import { openReconciliationItem } from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFocused, seriousViolations } from '../support/browser.ts';
import { type PageOptions, useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import {
  type Barrier,
  barrier,
  type Platform,
  serveApi,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// The console in a real browser (Debian's Chromium), on the open loopback server `npm start`
// runs: the live tasks list, a task's page, cancelling with the button, keyboard use, and
// axe-core on every page. Every change the page must show is made by the test, then awaited in
// the DOM: nothing waits on a clock.
const database = useTestDatabase();
const gates = new Map<string, Barrier>();
const gated = defineTool<{ gate: string }>({
  name: 'gated',
  description: 'Finishes when the test opens its gate.',
  inputSchema: { type: 'object', properties: { gate: { type: 'string' } }, required: ['gate'] },
  retry: 'safe',
  async handler({ gate }) {
    await gates.get(gate)?.promise;
    return { content: [{ type: 'text', text: `gate ${gate} opened` }], structuredContent: { gate } };
  },
});

// Stops only at the checkpoint after its gate opens: the test decides when the cancel is observed.
const checkpointed = defineTool<{ gate: string }>({
  name: 'checkpointed',
  description: 'Passes a cancellation checkpoint when the test opens its gate.',
  inputSchema: { type: 'object', properties: { gate: { type: 'string' } }, required: ['gate'] },
  retry: 'safe',
  async handler({ gate }, ctx) {
    await gates.get(gate)?.promise;
    await ctx.checkpoint();
    return { content: [{ type: 'text', text: 'not cancelled' }] };
  },
});

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);

beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [gated, checkpointed] as never });
  await platform.startWorker();
  api = await serveApi(platform, database.url, {
    mcp: { loopbackOnly: true },
    events: { pollMs: 200, keepaliveMs: 15_000 },
  });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  for (const gate of gates.values()) gate.resolve();
  await api?.close();
  await platform?.stop();
});

async function open(path: string, options: PageOptions = {}) {
  const page = await ui.page(options);
  const response = await page.goto(`${origin}${path}`);
  expect(response?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
  return page;
}

const gate = (name: string) => {
  const opened = barrier();
  gates.set(name, opened);
  return opened;
};

describe('the tasks page', () => {
  it('shows new tasks and their status changes live, without a reload', async () => {
    const page = await open('/ui');
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    await page.evaluate('window.notReloaded = true');
    const held = gate('live-1');
    const task = await platform.service.create('default', { tool: 'gated', arguments: { gate: 'live-1' } });
    const row = page.locator(`tr[data-id="${task.id}"]`);
    await row.waitFor();
    await expect.poll(() => row.getAttribute('data-status')).toBe('working');
    held.resolve();
    await page.locator(`tr[data-id="${task.id}"][data-status="completed"]`).waitFor();
    expect(await row.getByText('completed').count()).toBe(1);
    expect(await page.evaluate('window.notReloaded')).toBe(true);
  });

  it('keeps trying a stream an outage refuses (503), and is live again once it is served', async () => {
    const page = await ui.page();
    // The stream and the read that asks why it was refused both answer 503, as a server whose
    // database is down does, until the test lets them through.
    let outage = true;
    const refused: string[] = [];
    const unavailable = JSON.stringify({ type: 'about:blank', status: 503, code: 'TG_DATABASE_UNAVAILABLE' });
    await page.route(/\/v1\/tasks(\/events)?\?/, async (route) => {
      if (!outage) return route.continue();
      refused.push(new URL(route.request().url()).pathname);
      return route.fulfill({ status: 503, contentType: 'application/problem+json', body: unavailable });
    });
    await page.goto(`${origin}/ui`);
    await expect.poll(() => refused.filter((path) => path === '/v1/tasks').length).toBeGreaterThan(1);
    await page.locator('.problem').first().waitFor();
    outage = false;
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    expect(await page.locator('.problem').count()).toBe(0);
    ui.forgive((problem) => problem.includes('503'));
  });

  it('filters by status and tool from the form, and the filtered page has its own URL', async () => {
    const held = gate('filter-1');
    const working = await platform.service.create('default', { tool: 'gated', arguments: { gate: 'filter-1' } });
    const greeted = await platform.service.create('default', { tool: 'greet', arguments: { name: 'filters' } });
    await waitForTask(
      () => platform.service.get('default', greeted.id),
      (task) => task.status === 'completed',
    );
    const page = await open('/ui');
    await page.locator(`tr[data-id="${greeted.id}"]`).waitFor();
    await page.getByLabel('Status').selectOption('working');
    await page.waitForURL(`${origin}/ui?status=working`);
    await page.locator(`tr[data-id="${working.id}"]`).waitFor();
    expect(await page.locator(`tr[data-id="${greeted.id}"]`).count()).toBe(0);
    expect(await page.locator('tbody tr[data-status]:not([data-status="working"])').count()).toBe(0);

    await page.goto(`${origin}/ui?tool=greet`);
    await page.locator(`tr[data-id="${greeted.id}"]`).waitFor();
    expect(await page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.textContent))).toSatisfy(
      (texts: string[]) => texts.every((text) => text.includes('greet')),
    );
    expect(await page.getByLabel('Tool').inputValue()).toBe('greet');
    held.resolve();
  });

  it('searches by task id and by idempotency key', async () => {
    const created = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { 'idempotency-key': 'console-search-1' },
      payload: { tool: 'charge_account', arguments: { account: 'search', cents: 5 } },
    });
    expect(created.statusCode).toBe(201);
    const id = created.json().id as string;
    const page = await open('/ui');
    await page.getByLabel('Search').fill('console-search-1');
    await page.getByLabel('Search').press('Enter');
    await page.waitForURL(/q=console-search-1/);
    await page.locator(`tr[data-id="${id}"]`).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Search').fill(id);
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(new RegExp(`q=${id}`));
    await page.locator(`tr[data-id="${id}"]`).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.getByLabel('Search').fill('no-such-key-anywhere');
    await page.getByLabel('Search').press('Enter');
    await page.getByText('No tasks match.').waitFor();
  });

  it('pages older tasks with a link that survives a reload', async () => {
    const tool = 'greet';
    for (let n = 0; n < 55; n += 1)
      await platform.service.create('default', { tool, arguments: { name: `page-${n}` } });
    const page = await open('/ui?tool=greet&limit=50');
    await page.locator('tbody tr').nth(49).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(50);
    const firstOnPage1 = await page.locator('tbody tr').first().getAttribute('data-id');
    await page.getByRole('link', { name: 'Older →' }).click();
    await page.waitForURL(/cursor=/);
    await page.getByRole('link', { name: '← Newest' }).waitFor();
    const page2 = await page.locator('tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')));
    expect(page2.length).toBeGreaterThan(0);
    expect(page2).not.toContain(firstOnPage1);
    await page.reload();
    await page.locator(`tr[data-id="${page2[0]}"]`).waitFor();
  });

  it('shows what a tool returned as text, never as markup, and folds a large value', async () => {
    const markup = '<img src="http://evil.example/x.png" onerror="alert(1)"><script>alert(2)</script>';
    const task = await platform.service.create('default', {
      tool: 'gated',
      arguments: { gate: markup, padding: 'x'.repeat(5_000) },
    });
    const page = await open(`/ui/tasks/${task.id}`);
    await page.getByRole('heading', { name: 'Arguments' }).waitFor();
    // Folded: the value is behind a disclosure, and its text (markup included) is shown as text.
    const fold = page.locator('details.fold');
    await fold.locator('summary').click();
    expect(await fold.locator('pre').textContent()).toContain(JSON.stringify(markup));
    expect(await page.locator('img[src*="evil.example"], script:not([src])').count()).toBe(0);
    await platform.service.cancel('default', task.id, null, { signal: 'rest_cancel' });
  });
});

describe('a task page', () => {
  it('shows the task live and cancels it with the keyboard: Cancel task, Confirm, then cancelled', async () => {
    const task = await platform.service.create('default', { tool: 'slow_compute', arguments: { seconds: 120 } });
    await waitForTask(
      () => platform.service.get('default', task.id),
      (read) => read.progress !== null,
    );
    const page = await open(`/ui/tasks/${task.id}`);
    await page.getByRole('heading', { name: /^Task/ }).waitFor();
    await page.getByText('Attempt 1 started').waitFor();
    await page.locator('.task-progress progress').waitFor();
    await page.getByText(/Idle clock/).waitFor();

    // Keyboard only: focus moves to the button by Tab, Enter presses it.
    const cancel = page.getByRole('button', { name: 'Cancel task' });
    await page.locator('body').focus();
    for (let presses = 0; presses < 60; presses += 1) {
      if (await isFocused(cancel)) break;
      await page.keyboard.press('Tab');
    }
    expect(await isFocused(cancel)).toBe(true);
    await page.keyboard.press('Enter');
    const confirm = page.getByRole('button', { name: 'Confirm' });
    await confirm.waitFor();
    expect(await isFocused(confirm)).toBe(true);
    await page.keyboard.press('Enter');

    // The acknowledgement first, then the ending the worker observed.
    await page.getByText('Cancel requested').first().waitFor();
    await page.locator('.status-line .badge.status-cancelled').waitFor();
    await page.getByText('Cancel observed by the worker').waitFor();
    expect(await page.getByRole('button', { name: 'Cancel task' }).count()).toBe(0);
    const ended = await platform.service.get('default', task.id);
    expect(ended.status).toBe('cancelled');
  });

  it('keeps the newest timeline when a read made before the cancel was observed answers last', async () => {
    const held = gate('late-read');
    const task = await platform.service.create('default', { tool: 'checkpointed', arguments: { gate: 'late-read' } });
    await waitForTask(
      () => platform.service.get('default', task.id),
      (read) => read.attempt === 1 && read.status === 'working',
    );
    const page = await open(`/ui/tasks/${task.id}`);
    await page.getByText('Attempt 1 started').waitFor();

    // Every timeline read made after the cancel that does not yet know it was observed is held
    // until one that knows has reached the page, and only then answered.
    let cancelAsked = false;
    page.on('request', (request) => {
      if (request.method() === 'POST' && request.url().endsWith('/cancel')) cancelAsked = true;
    });
    const observedServed = barrier();
    const stale: Promise<void>[] = [];
    await page.route('**/timeline', async (route) => {
      const response = await route.fetch();
      const body = await response.text();
      if (!cancelAsked || body.includes('"cancel_observed"')) {
        await route.fulfill({ response, body });
        if (body.includes('"cancel_observed"')) observedServed.resolve();
        return;
      }
      const answered = observedServed.promise.then(() => route.fulfill({ response, body }));
      stale.push(answered);
      await answered;
    });

    await page.getByRole('button', { name: 'Cancel task' }).click();
    await page.getByRole('button', { name: 'Confirm' }).click();
    await page.locator('.badge.cancel-requested').waitFor();
    await expect.poll(() => stale.length).toBeGreaterThan(0);
    held.resolve();
    await page.locator('.status-line .badge.status-cancelled').waitFor();
    await page.getByText('Cancel observed by the worker').waitFor();
    await Promise.all(stale);
    // The late answers have reached the page; one more turn of its event loop lets it act on them.
    await page.evaluate('new Promise((resolve) => setTimeout(() => setTimeout(resolve, 0), 0))');
    expect(await page.getByText('Cancel observed by the worker').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Cancel task' }).count()).toBe(0);
  });

  it('answers an unknown or malformed id with a page that says so', async () => {
    for (const id of ['0f8c7a4e-1111-4a4a-8b8b-123456789abc', 'not-a-task']) {
      const page = await open(`/ui/tasks/${id}`);
      await page.getByText(`There is no task ${id}`).waitFor();
      await ui.closePage((problem) => problem.includes('404'));
    }
  });
});

describe('every page', () => {
  it('has no serious or critical accessibility violation, light and dark, from 1024 px wide', {
    timeout: 180_000,
  }, async () => {
    const task = await platform.service.create('default', { tool: 'greet', arguments: { name: 'axe' } });
    await waitForTask(
      () => platform.service.get('default', task.id),
      (read) => read.status === 'completed',
    );
    // Something on every page: a reconciliation item and a dead-lettered outbox event too.
    await openReconciliationItem(platform.db, task.id, 'its attempt was lost (for the accessibility walk)');
    const { rows: items } = await sql<{ id: string }>`
      SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${task.id}::uuid`.execute(platform.db);
    await sql`
      INSERT INTO outbox (tenant_id, aggregate_type, aggregate_id, event_type, payload, attempts, last_error, dead_at)
      VALUES ('default', 'order', 'o-1', 'order.shipped', '{"order": "o-1"}', 10, 'HTTP 503', now())`.execute(
      platform.db,
    );
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const [path, ready] of [
        ['/ui', 'tbody tr'],
        [`/ui/tasks/${task.id}`, 'ol.timeline li'],
        ['/ui/tools', 'tr[data-tool="greet"]'],
        ['/ui/catalog', 'section[data-tool="greet"]'],
        ['/ui/workers', 'tbody tr'],
        ['/ui/reconciliation', 'tbody tr'],
        [`/ui/reconciliation/${items[0]?.id}`, 'h2'],
        ['/ui/outbox', 'tbody tr'],
        ['/ui/login', 'h1'],
        ['/ui/no/such/page', 'h1'],
      ] as const) {
        const page = await open(path, { colorScheme, viewport: { width: 1024, height: 768 } });
        await page.locator(ready).first().waitFor();
        expect(await seriousViolations(page), `${path} (${colorScheme})`).toEqual([]);
        // Usable at 1024 px: nothing wider than the window.
        expect(await page.evaluate('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(1024);
        await ui.closePage();
      }
    }
  });
});
