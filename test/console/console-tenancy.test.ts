import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sql } from 'kysely';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { seriousViolations } from '../support/browser.ts';
import { useConsoleBrowser } from '../support/console-browser.ts';
import { useTestDatabase } from '../support/databases.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// A server that asks for tokens: the console signs in at /ui/login, shows a tenant only its own
// tasks on every page, refuses a state change that another origin makes with the browser's
// cookie, and signs out.
const database = useTestDatabase();
const ACME = 'acme-browser-token-0123456789';
const GLOBEX = 'globex-browser-token-0123456789';

let platform: Platform;
let api: Awaited<ReturnType<typeof serveApi>>;
let origin: string;
const ui = useConsoleBrowser(() => origin);
let attacker: http.Server;
let attackerOrigin: string;
let attackerPage = '';

beforeAll(async () => {
  platform = await startPlatform(database.url);
  api = await serveApi(platform, database.url, {
    tokens: new Map([
      [ACME, 'acme'],
      [GLOBEX, 'globex'],
    ]),
    events: { pollMs: 200, keepaliveMs: 15_000 },
  });
  origin = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  // Another origin on the same site (127.0.0.1, another port): SameSite=Strict lets the browser
  // send the console's cookie from it, so only the Origin and CSRF checks stand in the way.
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

async function signedIn(token: string): Promise<Page> {
  const page = await ui.page();
  await page.goto(`${origin}/ui`);
  await page.waitForURL(`${origin}/ui/login?next=%2Fui`);
  await page.getByLabel('Token').fill(token);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${origin}/ui`);
  return page;
}

describe('signing in', () => {
  it('shows no data without a session, leads to sign-in, and says when a token is wrong', async () => {
    const task = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'before sign-in' } });
    const page = await ui.page();
    await page.goto(`${origin}/ui/tasks/${task.id}`);
    await page.waitForURL(`${origin}/ui/login?next=${encodeURIComponent(`/ui/tasks/${task.id}`)}`);
    await page.getByRole('heading', { name: 'Sign in to Taskgate' }).waitFor();
    expect(await page.content()).not.toContain(task.id.slice(0, 8));
    // Nothing of /v1 was asked for without a session.
    expect((ui.watch?.requests ?? []).filter((url) => url.includes('/v1/'))).toEqual([]);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('Token').fill('wrong-token-0123456789');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'That token is not accepted' }).waitFor();
    // The refused sign-in's 401 is the one failure this page may log.
    ui.forgive((line) => line.includes('401'));

    await page.getByLabel('Token').fill(ACME);
    await page.getByRole('button', { name: 'Sign in' }).click();
    // Back where the person was going, as acme, with the cookie out of the page's reach.
    await page.waitForURL(`${origin}/ui/tasks/${task.id}`);
    await page.getByText('before sign-in').waitFor();
    await page.getByText('Tenant acme').waitFor();
    expect(await page.evaluate('document.cookie')).toBe('');
    expect(await page.locator('#token').count()).toBe(0);
  });
});

describe('tenant isolation', () => {
  it("never shows tenant A tenant B's tasks: not in the list, live or not, by id, by key, on a task page or the tools overview", async () => {
    const theirs = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { authorization: `Bearer ${GLOBEX}`, 'idempotency-key': 'shared-key-1' },
      payload: { tool: 'charge_account', arguments: { account: 'g', cents: 1 } },
    });
    const mine = await api.app.inject({
      method: 'POST',
      url: '/v1/tasks',
      headers: { authorization: `Bearer ${ACME}`, 'idempotency-key': 'shared-key-1' },
      payload: { tool: 'charge_account', arguments: { account: 'a', cents: 1 } },
    });
    const theirId = theirs.json().id as string;
    const myId = mine.json().id as string;
    const page = await signedIn(ACME);
    await page.locator(`tr[data-id="${myId}"]`).waitFor();
    expect(await page.locator(`tr[data-id="${theirId}"]`).count()).toBe(0);

    // Live: globex's new task comes first, then acme's; when acme's is on the page, globex's
    // would have been too.
    await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
    const theirLive = await platform.service.create('globex', { tool: 'greet', arguments: { name: 'globex live' } });
    const myLive = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'acme live' } });
    await page.locator(`tr[data-id="${myLive.id}"]`).waitFor();
    expect(await page.locator(`tr[data-id="${theirLive.id}"]`).count()).toBe(0);

    // By id and by the same idempotency key: acme's own, never globex's.
    await page.goto(`${origin}/ui?q=${theirId}`);
    await page.getByText('No tasks match.').waitFor();
    await page.goto(`${origin}/ui?q=shared-key-1`);
    await page.locator(`tr[data-id="${myId}"]`).waitFor();
    expect(await page.locator('tbody tr').count()).toBe(1);
    await page.goto(`${origin}/ui/tasks/${theirId}`);
    await page.getByText(`There is no task ${theirId} for this tenant`).waitFor();
    expect(await page.content()).not.toContain('globex');
    // The page's 404 for globex's task is expected; nothing else may have failed.
    ui.forgive((line) => line.includes('404'));

    // The tools overview counts acme's tasks, never globex's (which has one of each tool too).
    const queued = async (tenants: readonly string[]) => {
      const { rows } = await sql<{ tool: string; n: number }>`
        SELECT tool, count(*)::int AS n FROM tasks
        WHERE tenant_id = ANY(${[...tenants]}::text[]) AND status = 'working' AND started_at IS NULL
        GROUP BY tool`.execute(platform.db);
      return new Map(rows.map((row) => [row.tool, row.n]));
    };
    const [acmeOnly, both] = [await queued(['acme']), await queued(['acme', 'globex'])];
    await page.goto(`${origin}/ui/tools`);
    for (const tool of ['charge_account', 'greet']) {
      const cell = page.locator(`tr[data-tool="${tool}"] [data-field="queued"]`);
      await cell.waitFor();
      expect(acmeOnly.get(tool)).not.toBe(both.get(tool));
      expect(await cell.textContent(), tool).toBe(String(acmeOnly.get(tool)));
    }
  });
});

describe('cross-origin requests', () => {
  it("refuses a cancel another origin makes with the browser's session cookie", async () => {
    const task = await platform.service.create('acme', { tool: 'slow_compute', arguments: { seconds: 120 } });
    await signedIn(ACME);
    // The attacker's page, in the same browser context (so with the console's cookie): a fetch
    // that needs no preflight (no body, so nothing for a content-type check to refuse: without
    // the CSRF check it cancels), and a form post.
    attackerPage = `<!doctype html><title>attack</title>
      <form id="f" method="POST" action="${origin}/v1/tasks/${task.id}/cancel" enctype="text/plain"><input name="a" value="b"></form>
      <script>
        fetch(${JSON.stringify(`${origin}/v1/tasks/${task.id}/cancel`)}, { method: 'POST', mode: 'no-cors', credentials: 'include' })
          .finally(() => document.getElementById('f').submit());
      </script>`;
    const context = ui.watch?.page.context();
    const evil = await context?.newPage();
    if (!evil) throw new Error('no page');
    const refusals: number[] = [];
    evil.on('response', (response) => {
      if (response.url().endsWith(`/v1/tasks/${task.id}/cancel`)) refusals.push(response.status());
    });
    await evil.goto(attackerOrigin);
    // The fetch's answer, then the form's (the form navigates the page to the refusal).
    await evil.waitForURL(`${origin}/v1/tasks/${task.id}/cancel`);
    await expect.poll(() => refusals.length).toBe(2);
    expect(refusals).toEqual([403, 403]);
    expect((await platform.service.get('acme', task.id)).cancelRequestedAt).toBeNull();
    await evil.close();
    await platform.service.cancel('acme', task.id, null, { signal: 'rest_cancel' });
  });
});

describe('signing out', () => {
  it('ends the session: the page leads to sign-in again and the old cookie opens nothing', async () => {
    const page = await signedIn(GLOBEX);
    const cookies = await page.context().cookies(origin);
    const session = cookies.find((cookie) => cookie.name === 'taskgate_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/ui/login`);
    await page.getByRole('heading', { name: 'Sign in to Taskgate' }).waitFor();
    const replay = await api.app.inject({
      method: 'GET',
      url: '/v1/tasks',
      headers: { cookie: `taskgate_session=${session?.value}` },
    });
    expect(replay.statusCode).toBe(401);
    await page.goto(`${origin}/ui`);
    await page.waitForURL(/\/ui\/login/);
  });
});
