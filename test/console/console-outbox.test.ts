import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { addOutboxEvents } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFocused, seriousViolations } from '../support/browser.ts';
import { type PageOptions, useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// The outbox page: pending and dead-lettered events per event type, the dead-lettered events with
// what the relay left, and Redeliver on one — each tenant's own only, never from another origin.
const database = useTestDatabase();
const ACME = 'acme-outbox-page-token-0123456789';
const GLOBEX = 'globex-outbox-page-token-0123456789';

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);
let attacker: http.Server;
let attackerOrigin: string;
let attackerPage = '';
let aggregates = 0;

beforeAll(async () => {
  // No relay: the events stay where the test puts them.
  platform = await startPlatform(database.url);
  api = await serveApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
  });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  // Another origin on the same site: the browser sends the console's SameSite=Strict cookie from
  // it, so only the Origin and CSRF checks stand in the way.
  attacker = http.createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(attackerPage);
  });
  await new Promise<void>((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  attackerOrigin = `http://127.0.0.1:${(attacker.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => attacker?.close(resolve));
  await api?.close();
  await platform?.stop();
});

const signedIn = (token: string, next: string, options: PageOptions = {}) => ui.signIn(token, next, options);

/** A dead-lettered event of `tenant`, as the relay leaves one after its last attempt; its id. */
async function deadEvent(tenant: string, eventType: string, payload: unknown): Promise<string> {
  aggregates += 1;
  const [id] = await addOutboxEvents(platform.db, [
    { tenantId: tenant, aggregateType: 'order', aggregateId: `order-${aggregates}`, eventType, payload },
  ]);
  if (id === undefined) throw new Error('nothing inserted');
  await sql`
    UPDATE outbox SET attempts = 10, leased_by = 'relay-1', dead_at = now(),
      last_error = 'HTTP 503 Service Unavailable (http://sink.example/hook)'
    WHERE id = ${id}::bigint`.execute(platform.db);
  return id;
}

const stored = (id: string) =>
  platform.db
    .selectFrom('outbox')
    .select(['dead_at', 'attempts', 'delivered_at'])
    .where('id', '=', id)
    .executeTakeFirstOrThrow();

describe('the outbox page', () => {
  it('lists a dead-lettered event and redelivers it by keyboard: the row and the database say pending', async () => {
    const mine = await deadEvent('acme', 'order.paid', { order: 41, cents: 1200 });
    const theirs = await deadEvent('globex', 'order.paid', { secret: 'globex only' });
    const page = await signedIn(ACME, '/ui/outbox');
    const row = page.locator(`tr[data-id="${mine}"]`);
    await row.waitFor();
    await row.getByText('HTTP 503 Service Unavailable (http://sink.example/hook)').waitFor();
    await row.locator('code', { hasText: 'order.paid' }).waitFor();
    expect(await row.locator('time').getAttribute('title')).toBeTruthy();
    expect(await page.locator(`tr[data-id="${theirs}"]`).count()).toBe(0);
    await page.locator('tr[data-event-type="order.paid"]').waitFor();
    expect(await page.getByRole('link', { name: 'Outbox', exact: true }).getAttribute('aria-current')).toBe('page');
    // The payload, folded until asked for.
    await row.getByText('Payload').click();
    await row.getByText('"cents": 1200').waitFor();

    // By keyboard: from the event's copy button, Tab until Redeliver has the focus, then Enter.
    const redeliver = row.getByRole('button', { name: 'Redeliver' });
    await row.getByRole('button', { name: `Copy event ${mine}` }).focus();
    for (let presses = 0; presses < 10 && !(await isFocused(redeliver)); presses += 1) await page.keyboard.press('Tab');
    expect(await isFocused(redeliver)).toBe(true);
    await page.keyboard.press('Enter');
    const again = page.locator(`tr[data-id="${mine}"][data-state="pending"]`);
    await again.waitFor();
    await again.locator('.badge', { hasText: 'pending' }).waitFor();
    expect(await again.getByRole('button', { name: 'Redeliver' }).count()).toBe(0);
    await page
      .getByRole('status')
      .filter({ hasText: `Event ${mine} is pending again` })
      .waitFor();
    expect(await stored(mine)).toMatchObject({ dead_at: null, delivered_at: null, attempts: 0 });

    // Reloaded, the pending tab (state in the URL) lists it.
    await page.getByRole('link', { name: 'Pending', exact: true }).click();
    await page.waitForURL(`${origin}/ui/outbox?state=pending`);
    await page.reload();
    await page.locator(`tr[data-id="${mine}"][data-state="pending"]`).waitFor();
    expect(await page.content()).not.toContain('globex only');
  });

  it('says why when the event was redelivered elsewhere meanwhile (409)', async () => {
    const id = await deadEvent('acme', 'order.refunded', { order: 42 });
    const page = await signedIn(ACME, '/ui/outbox?state=dead&eventType=order.refunded');
    const row = page.locator(`tr[data-id="${id}"]`);
    await row.waitFor();
    // Someone else got there first.
    await sql`UPDATE outbox SET dead_at = NULL, attempts = 0 WHERE id = ${id}::bigint`.execute(platform.db);
    await row.getByRole('button', { name: 'Redeliver' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Event ${id} was not redelivered` })
      .waitFor();
    await page.getByRole('status').filter({ hasText: 'pending, not dead-lettered' }).waitFor();
    // The refused POST's 409 is the one failure this page may log.
    ui.forgive((line) => line.includes('409'));
  });

  it("shows another tenant none of acme's events, in the list or the figures", async () => {
    const mine = await deadEvent('acme', 'acme.only', { n: 1 });
    const theirs = await deadEvent('globex', 'globex.own', { n: 2 });
    const page = await signedIn(GLOBEX, '/ui/outbox');
    // Acme's event is older than globex's, so it would be listed by now, and counted.
    await page.locator(`tr[data-id="${theirs}"]`).waitFor();
    await page.locator('tr[data-event-type="globex.own"]').waitFor();
    expect(await page.locator(`tr[data-id="${mine}"]`).count()).toBe(0);
    expect(await page.locator('tr[data-event-type="acme.only"]').count()).toBe(0);
    expect(await page.content()).not.toContain('acme.only');
  });

  for (const colorScheme of ['light', 'dark'] as const) {
    it(`has no serious accessibility violation in ${colorScheme} at 1024 px`, async () => {
      await deadEvent('acme', 'order.shipped', { big: 'x'.repeat(3000) });
      const page = await signedIn(ACME, '/ui/outbox', { colorScheme, viewport: { width: 1024, height: 800 } });
      await page.locator('table.outbox-events tbody tr').first().waitFor();
      await page.locator('table.outbox-summary').waitFor();
      // An open payload and a message shown, as well as the page at rest.
      await page.locator('table.outbox-events tbody tr').first().locator('summary').click();
      expect(await seriousViolations(page)).toEqual([]);
      const width = await page.evaluate('document.documentElement.scrollWidth');
      expect(width).toBeLessThanOrEqual(1024);
    });
  }
});

describe('cross-origin requests', () => {
  it("refuses a redeliver another origin makes with the browser's session cookie", async () => {
    const id = await deadEvent('acme', 'order.paid', { order: 43 });
    const page = await signedIn(ACME, '/ui/outbox');
    await page.locator(`tr[data-id="${id}"]`).waitFor();
    const target = `${origin}/v1/outbox/events/${id}/redeliver`;
    // A fetch that needs no preflight (no body), in the same browser context, so with the cookie.
    attackerPage = `<!doctype html><title>attack</title>
      <script>fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include' })</script>`;
    const evil = await page.context().newPage();
    const refused = new Promise<number>((resolve) => {
      evil.on('response', (response) => {
        if (response.url() === target) resolve(response.status());
      });
    });
    await evil.goto(attackerOrigin);
    expect(await refused).toBe(403);
    expect((await stored(id)).dead_at).not.toBeNull();
    await evil.close();
  });
});
