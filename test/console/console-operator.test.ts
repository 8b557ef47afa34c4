import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from '../support/browser.ts';
import { useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform, waitForTask } from '../support/task-platform.ts';

// An operator in the console: signed in with an operator token, it chooses the tenant to act for
// (the tenants that have tasks, or one typed), the choice rides in the URL from page to page, the
// live list and a task page read that tenant's tasks, and Switch chooses another. A tenant's
// session is not moved by a `tenant` in the URL.
const database = useTestDatabase();
const ACME = 'acme-operator-browser-token-01';
const GLOBEX = 'globex-operator-browser-token-01';
const OPERATOR = 'operator-browser-token-0123456';

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);
let acmeTask: string;
let globexTask: string;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  await platform.startWorker();
  api = await serveApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
    operatorTokens: new Set([OPERATOR]),
    events: { pollMs: 200, keepaliveMs: 15_000 },
  });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  acmeTask = (await platform.service.create('acme', { tool: 'greet', arguments: { name: 'acme' } })).id;
  globexTask = (await platform.service.create('globex', { tool: 'greet', arguments: { name: 'globex' } })).id;
  for (const [tenant, id] of [
    ['acme', acmeTask],
    ['globex', globexTask],
  ] as const) {
    await waitForTask(
      () => platform.service.get(tenant, id),
      (read) => read.status === 'completed',
    );
  }
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
});

const signIn = (token: string, path: string, options: Parameters<typeof ui.signIn>[2] = {}) =>
  ui.signIn(token, path, { landsOn: null, ...options });

describe('an operator', () => {
  it('chooses a tenant, reads its tasks live and page to page, and switches to another', async () => {
    const page = await signIn(OPERATOR, '/ui');
    // No tenant yet: the choice first, and then back to the tasks.
    await page.waitForURL(`${origin}/ui/tenants?next=%2Fui`);
    await page.getByRole('heading', { name: 'Choose a tenant' }).waitFor();
    await page.getByRole('link', { name: 'globex' }).click();
    await page.waitForURL(`${origin}/ui?tenant=globex`);
    await page.locator(`tr[data-id="${globexTask}"]`).waitFor();
    // The list's stream is the tenant's too (an EventSource names it in its query).
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    expect(await page.locator(`tr[data-id="${acmeTask}"]`).count()).toBe(0);
    await page.locator('#who').getByText('Operator · tenant globex').waitFor();

    // A link within the console keeps the tenant.
    await page.locator(`tr[data-id="${globexTask}"] a`).first().click();
    await page.waitForURL(`${origin}/ui/tasks/${globexTask}?tenant=globex`);
    await page.getByText('Attempt 1 started').waitFor();
    await page.getByRole('link', { name: 'Workers' }).click();
    await page.waitForURL(`${origin}/ui/workers?tenant=globex`);
    await page.locator('tbody tr').first().waitFor();

    // Switch: typed by name this time.
    await page.locator('#who').getByRole('link', { name: 'Switch' }).click();
    await page.waitForURL(`${origin}/ui/tenants`);
    await page.getByLabel('Tenant').fill('ac me');
    await page.getByRole('button', { name: 'Open' }).click();
    await page.getByRole('status').filter({ hasText: "A tenant's name is letters" }).waitFor();
    await page.getByLabel('Tenant').fill('acme');
    await page.getByRole('button', { name: 'Open' }).click();
    await page.waitForURL(`${origin}/ui?tenant=acme`);
    await page.locator(`tr[data-id="${acmeTask}"]`).waitFor();
    expect(await page.locator(`tr[data-id="${globexTask}"]`).count()).toBe(0);
    // Every /v1 request the pages made named a tenant, but the fleet's and the tenants' list.
    const unnamed = (ui.watch?.requests ?? []).filter(
      (url) => url.includes('/v1/') && !/[?&]tenant=/.test(url) && !/\/v1\/(tenants|instances)\b/.test(url),
    );
    expect(unnamed).toEqual([]);
  });

  it('has an accessible choice of tenant, light and dark, at 1024 px', async () => {
    for (const colorScheme of ['light', 'dark'] as const) {
      const page = await signIn(OPERATOR, '/ui/tenants', { colorScheme, viewport: { width: 1024, height: 768 } });
      await page.getByRole('link', { name: 'acme' }).waitFor();
      expect(await seriousViolations(page), colorScheme).toEqual([]);
      await ui.closePage();
    }
  });
});

describe("a tenant's session", () => {
  it('is not moved to another tenant by a tenant in the URL', async () => {
    const page = await signIn(ACME, '/ui?tenant=globex');
    await page.waitForURL(`${origin}/ui?tenant=globex`);
    await page.locator(`tr[data-id="${acmeTask}"]`).waitFor();
    expect(await page.locator(`tr[data-id="${globexTask}"]`).count()).toBe(0);
    expect((ui.watch?.requests ?? []).filter((url) => url.includes('tenant=') && url.includes('/v1/'))).toEqual([]);
  });
});
