import type { AddressInfo } from 'node:net';
import { openReconciliationItem } from '@taskgate/db';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from '../support/browser.ts';
import { useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// The reconciliation pages: the items a lost or abandoned call left for a person, one item with
// what was known, and resolving it with a note — each tenant's own only.
const database = useTestDatabase();
const ACME = 'acme-reconcile-token-0123456789';
const GLOBEX = 'globex-reconcile-token-0123456789';

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);

beforeAll(async () => {
  // No worker: the items are opened as a worker would open them, for tasks nobody runs.
  platform = await startPlatform(database.url);
  api = await serveApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await api?.close();
  await platform?.stop();
});

const signedIn = (token: string, next: string) => ui.signIn(token, next);

/** An open item for a new task of `tenant`; its id. */
async function openItem(tenant: string, reason: string): Promise<string> {
  const task = await platform.service.create(tenant, { tool: 'greet', arguments: { name: reason } });
  await openReconciliationItem(platform.db, task.id, reason);
  const listed = await platform.db
    .selectFrom('reconciliation_items')
    .select(['id'])
    .where('task_id', '=', task.id)
    .executeTakeFirstOrThrow();
  return String(listed.id);
}

describe('the reconciliation pages', () => {
  it('list the open items, show one, and resolve it with a note of who and what', async () => {
    const mine = await openItem('acme', 'attempt 1 was lost after the charge was sent');
    const theirs = await openItem('globex', 'globex only');
    const page = await signedIn(ACME, '/ui/reconciliation');
    const row = page.locator(`tr[data-id="${mine}"]`);
    await row.waitFor();
    expect(await page.locator(`tr[data-id="${theirs}"]`).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await row.getByRole('link', { name: `#${mine}` }).click();
    await page.waitForURL(`${origin}/ui/reconciliation/${mine}`);
    await page.getByText('attempt 1 was lost after the charge was sent').waitFor();
    await page.getByRole('heading', { name: 'What was known when it opened' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('What was found and done').fill('Checked the processor: charged once. Closed.');
    await page.getByLabel('Your name').fill('Ada');
    await page.getByRole('button', { name: 'Resolve' }).click();
    await page.getByText('Checked the processor: charged once. Closed.').waitFor();
    await page.getByText(/by Ada/).waitFor();
    const stored = await platform.db
      .selectFrom('reconciliation_items')
      .select(['resolved_by', 'resolution', 'resolved_at'])
      .where('id', '=', mine)
      .executeTakeFirstOrThrow();
    expect(stored).toMatchObject({ resolved_by: 'Ada', resolution: 'Checked the processor: charged once. Closed.' });
    expect(stored.resolved_at).not.toBeNull();

    // Open no more; listed among the resolved.
    await page.goto(`${origin}/ui/reconciliation`);
    await page.getByRole('heading', { name: 'Reconciliation' }).waitFor();
    await page.locator('table, p.empty').first().waitFor();
    expect(await page.locator(`tr[data-id="${mine}"]`).count()).toBe(0);
    await page.getByRole('link', { name: 'resolved' }).click();
    await page.locator(`tr[data-id="${mine}"]`).getByText('by Ada').waitFor();
  });

  it("show another tenant's item to nobody: its page says there is none", async () => {
    const theirs = await openItem('globex', 'not for acme');
    const page = await signedIn(ACME, `/ui/reconciliation/${theirs}`);
    await page.getByRole('alert').waitFor();
    expect(await page.content()).not.toContain('not for acme');
    // The page's 404 is expected; nothing else may have failed.
    ui.forgive((line) => line.includes('404'));
  });
});
