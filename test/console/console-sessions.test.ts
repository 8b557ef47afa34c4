import { createHash } from 'node:crypto';
import { CONSOLE_CSP, createAuthenticator } from '@taskgate/api';
import { openReconciliationItem } from '@taskgate/db';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { expectProblem } from '../support/problems.ts';
import { type Platform, startApi, startPlatform } from '../support/task-platform.ts';

// The console's sign-in at /ui/session: a token becomes a server-side session whose cookie never
// holds the token; /v1 takes the cookie as it takes the token; state changes need the same origin
// and the session's CSRF token.
const database = useTestDatabase();
const ACME = 'acme-console-token-0123456789';
const GLOBEX = 'globex-console-token-0123456789';
const HOST = '127.0.0.1:8080';
const ORIGIN = `http://${HOST}`;

let platform: Platform;
let api: Awaited<ReturnType<typeof startApi>>;
let tokens: Map<string, string>;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  tokens = new Map([
    [ACME, 'acme'],
    [GLOBEX, 'globex'],
  ]);
  api = await startApi(platform, database.url, { tokens });
});
afterAll(async () => {
  await api.close();
  await platform.stop();
});

type Headers = Record<string, string>;
const inject = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Headers = {}, payload?: object) =>
  api.app.inject({ method, url, headers: { host: HOST, ...headers }, ...(payload === undefined ? {} : { payload }) });

/** Signs in as the token's tenant; the session's cookie (name=value) and CSRF token. */
async function signIn(token = ACME): Promise<{ cookie: string; csrf: string; setCookie: string }> {
  const answer = await inject('POST', '/ui/session', { origin: ORIGIN }, { token });
  expect(answer.statusCode, answer.body).toBe(201);
  const setCookie = String(answer.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0] as string, csrf: answer.json().csrf, setCookie };
}

describe('signing in', () => {
  it('turns a valid token into an HttpOnly, SameSite=Strict session cookie that does not hold the token', async () => {
    const { setCookie, cookie, csrf } = await signIn();
    expect(setCookie).toMatch(/^taskgate_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+$/);
    expect(setCookie).not.toContain(ACME);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{32}$/);
    // The table keeps neither the session id nor the token, only digests.
    const id = cookie.split('=')[1] as string;
    const { rows } = await sql<{ id_digest: Buffer; token_digest: string; tenant_id: string }>`
      SELECT id_digest, token_digest, tenant_id FROM console_sessions`.execute(platform.db);
    const row = rows.find((candidate) => candidate.id_digest.equals(createHash('sha256').update(id).digest()));
    expect(row).toMatchObject({ tenant_id: 'acme', token_digest: createHash('sha256').update(ACME).digest('hex') });
    expect(JSON.stringify(rows)).not.toContain(ACME);
    expect(JSON.stringify(rows)).not.toContain(id);

    const who = await inject('GET', '/ui/session', { cookie });
    expect(who.json()).toMatchObject({ required: true, signedIn: true, tenant: 'acme', scopes: null, csrf });
    expect(who.headers['cache-control']).toBe('no-store');
  });

  it('marks the cookie Secure and __Host- when the page is served over https', async () => {
    const answer = await inject('POST', '/ui/session', { origin: `https://${HOST}` }, { token: ACME });
    expect(answer.statusCode).toBe(201);
    expect(String(answer.headers['set-cookie'])).toMatch(
      /^__Host-taskgate_session=[^;]+; Path=\/; HttpOnly; SameSite=Strict; Max-Age=\d+; Secure$/,
    );
  });

  it('refuses a wrong token, a body of the wrong type, and a sign-in from another origin', async () => {
    expectProblem(
      await inject('POST', '/ui/session', { origin: ORIGIN }, { token: 'not-a-token-at-all-xx' }),
      401,
      'TG_UNAUTHORIZED',
    );
    for (const payload of [{ token: 12345 }, { token: true }, { token: '' }, {}, { token: ACME, extra: 1 }]) {
      expectProblem(await inject('POST', '/ui/session', { origin: ORIGIN }, payload), 400, 'TG_REQUEST_INVALID');
    }
    expectProblem(
      await inject('POST', '/ui/session', { origin: ORIGIN }, { token: 'a\u0000b' }),
      400,
      'TG_JSON_STRING_INVALID',
    );
    // Login CSRF: another site signing the browser in as the attacker's tenant.
    expectProblem(
      await inject('POST', '/ui/session', { origin: 'http://evil.example' }, { token: ACME }),
      403,
      'TG_CSRF_REFUSED',
    );
    expectProblem(await inject('POST', '/ui/session', {}, { token: ACME }), 403, 'TG_CSRF_REFUSED');
    expectProblem(await inject('POST', '/ui/session', { origin: 'null' }, { token: ACME }), 403, 'TG_CSRF_REFUSED');
  });

  it('says who is signed in, and that nobody is without a live session', async () => {
    expect((await inject('GET', '/ui/session')).json()).toEqual({
      required: true,
      signedIn: false,
      tenant: null,
      operator: false,
      scopes: null,
      csrf: null,
      expiresAt: null,
    });
    const forged = `taskgate_session=${'A'.repeat(43)}`;
    expect((await inject('GET', '/ui/session', { cookie: forged })).json()).toMatchObject({ signedIn: false });
    expect((await inject('GET', '/ui/session', { cookie: 'taskgate_session=%00;;=' })).json()).toMatchObject({
      signedIn: false,
    });
  });
});

describe('the session cookie on /v1', () => {
  it('reads as its tenant, exactly as the token would', async () => {
    const acmeTask = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'acme' } });
    const globexTask = await platform.service.create('globex', { tool: 'greet', arguments: { name: 'globex' } });
    const { cookie } = await signIn();
    const listed = await inject('GET', '/v1/tasks?limit=100', { cookie });
    expect(listed.statusCode).toBe(200);
    const ids = listed.json().tasks.map((task: { id: string }) => task.id);
    expect(ids).toContain(acmeTask.id);
    expect(ids).not.toContain(globexTask.id);
    expectProblem(await inject('GET', `/v1/tasks/${globexTask.id}`, { cookie }), 404, 'TG_TASK_NOT_FOUND');
    // No cookie, no token: 401 as before.
    expectProblem(await inject('GET', '/v1/tasks'), 401, 'TG_UNAUTHORIZED');
  });

  it('refuses a state change without the CSRF token or from another origin, and takes it with both', async () => {
    const task = await platform.service.create('acme', { tool: 'slow_compute', arguments: { seconds: 60 } });
    const { cookie, csrf } = await signIn();
    const cancel = (headers: Headers) => inject('POST', `/v1/tasks/${task.id}/cancel`, { cookie, ...headers }, {});
    expectProblem(await cancel({ origin: ORIGIN }), 403, 'TG_CSRF_REFUSED');
    expectProblem(await cancel({ 'x-taskgate-csrf': csrf }), 403, 'TG_CSRF_REFUSED');
    expectProblem(await cancel({ origin: 'http://evil.example', 'x-taskgate-csrf': csrf }), 403, 'TG_CSRF_REFUSED');
    expectProblem(
      await cancel({ origin: `http://${HOST}.evil.example`, 'x-taskgate-csrf': csrf }),
      403,
      'TG_CSRF_REFUSED',
    );
    // One character off (never the same one: a token that ends in x gets a y).
    const wrong = `${csrf.slice(0, -1)}${csrf.endsWith('x') ? 'y' : 'x'}`;
    expectProblem(await cancel({ origin: ORIGIN, 'x-taskgate-csrf': wrong }), 403, 'TG_CSRF_REFUSED');
    // Nothing was asked of the task by the refusals.
    expect((await platform.service.get('acme', task.id)).cancelRequestedAt).toBeNull();
    const accepted = await cancel({ origin: ORIGIN, 'x-taskgate-csrf': csrf });
    expect(accepted.statusCode).toBe(202);
    expect(accepted.json().cancelRequestedAt).not.toBeNull();
    // A bearer token needs neither: a browser never attaches one by itself.
    const other = await platform.service.create('acme', { tool: 'slow_compute', arguments: { seconds: 60 } });
    const byToken = await inject('POST', `/v1/tasks/${other.id}/cancel`, { authorization: `Bearer ${ACME}` }, {});
    expect(byToken.statusCode).toBe(202);
  });
});

describe('every state change the console makes', () => {
  it('refuses a reconciliation item resolved from another origin or without the CSRF token', async () => {
    const task = await platform.service.create('acme', { tool: 'greet', arguments: { name: 'to reconcile' } });
    await openReconciliationItem(platform.db, task.id, 'its attempt was lost');
    const items = await inject('GET', '/v1/reconciliation-items', { authorization: `Bearer ${ACME}` });
    const item = (items.json() as { items: { id: string; taskId: string }[] }).items.find(
      (entry) => entry.taskId === task.id,
    );
    if (!item) throw new Error('the item did not open');
    const { cookie, csrf } = await signIn();
    const resolve = (headers: Headers) =>
      inject(
        'POST',
        `/v1/reconciliation-items/${item.id}/resolve`,
        { cookie, ...headers },
        {
          resolution: 'checked the ledger: not charged',
          resolvedBy: 'ops',
        },
      );
    expectProblem(await resolve({ origin: 'http://evil.example', 'x-taskgate-csrf': csrf }), 403, 'TG_CSRF_REFUSED');
    expectProblem(await resolve({ origin: ORIGIN }), 403, 'TG_CSRF_REFUSED');
    const still = await inject('GET', `/v1/reconciliation-items/${item.id}`, { authorization: `Bearer ${ACME}` });
    expect(still.json().resolvedAt).toBeNull();
    const accepted = await resolve({ origin: ORIGIN, 'x-taskgate-csrf': csrf });
    expect(accepted.statusCode, accepted.body).toBe(200);
  });
});

describe('the session cookie elsewhere', () => {
  it('does not authenticate /mcp: an MCP client sends its token, a browser page is no MCP client', async () => {
    const { cookie } = await signIn();
    const call = (headers: Headers) =>
      inject(
        'POST',
        '/mcp',
        { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
      );
    const withCookie = await call({ cookie, origin: ORIGIN });
    expect(withCookie.statusCode).toBe(401);
    const withToken = await call({ authorization: `Bearer ${ACME}` });
    expect(withToken.statusCode).not.toBe(401);
  });
});

describe('ending a session', () => {
  it('signs out: the cookie is cleared and stops working, and only the same origin may do it', async () => {
    const { cookie, csrf } = await signIn();
    expectProblem(
      await inject('DELETE', '/ui/session', { cookie, origin: 'http://evil.example', 'x-taskgate-csrf': csrf }),
      403,
      'TG_CSRF_REFUSED',
    );
    expectProblem(await inject('DELETE', '/ui/session', { cookie, origin: ORIGIN }), 403, 'TG_CSRF_REFUSED');
    expect((await inject('GET', '/v1/tasks', { cookie })).statusCode).toBe(200);
    const out = await inject('DELETE', '/ui/session', { cookie, origin: ORIGIN, 'x-taskgate-csrf': csrf });
    expect(out.statusCode).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/^taskgate_session=; .*Max-Age=0/);
    expectProblem(await inject('GET', '/v1/tasks', { cookie }), 401, 'TG_UNAUTHORIZED');
    expect((await inject('GET', '/ui/session', { cookie })).json()).toMatchObject({ signedIn: false });
  });

  it('ends a session left idle past its window, or past its expiry', async () => {
    const idle = await signIn();
    const expired = await signIn();
    const digest = (cookie: string) =>
      createHash('sha256')
        .update(cookie.split('=')[1] as string)
        .digest();
    await sql`UPDATE console_sessions SET last_seen_at = now() - interval '9 hours' WHERE id_digest = ${digest(idle.cookie)}`.execute(
      platform.db,
    );
    await sql`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id_digest = ${digest(expired.cookie)}`.execute(
      platform.db,
    );
    expectProblem(await inject('GET', '/v1/tasks', { cookie: idle.cookie }), 401, 'TG_UNAUTHORIZED');
    expectProblem(await inject('GET', '/v1/tasks', { cookie: expired.cookie }), 401, 'TG_UNAUTHORIZED');
  });

  it("ends a static token's sessions when the token is taken out of TASKGATE_TOKENS", async () => {
    const { cookie } = await signIn(GLOBEX);
    expect((await inject('GET', '/v1/tasks', { cookie })).statusCode).toBe(200);
    // A restart with the token removed: same database, same session row.
    const without = await startApi(platform, database.url, {
      auth: createAuthenticator({
        tokens: new Map([[ACME, 'acme']]),
        unauthenticatedTenant: 'default',
        sessions: new (await import('@taskgate/api')).ConsoleSessions(platform.db),
      }),
    });
    try {
      const answer = await without.app.inject({ method: 'GET', url: '/v1/tasks', headers: { host: HOST, cookie } });
      expectProblem(answer, 401, 'TG_UNAUTHORIZED');
      // And the console is told so, rather than shown as signed in with every read refused.
      const who = await without.app.inject({ method: 'GET', url: '/ui/session', headers: { host: HOST, cookie } });
      expect(who.json()).toMatchObject({ required: true, signedIn: false, csrf: null });
    } finally {
      await without.close();
    }
  });
});

describe("the console's pages and files", () => {
  it('serves the shell for every page path, with the CSP, nosniff and no framing', async () => {
    for (const path of [
      '/ui',
      '/ui/',
      '/ui/login',
      '/ui/tasks/0f8c7a4e-1111-4a4a-8b8b-123456789abc',
      '/ui/anything/else',
    ]) {
      const page = await inject('GET', path);
      expect(page.statusCode, path).toBe(200);
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(page.headers['content-security-policy']).toBe(CONSOLE_CSP);
      expect(page.headers['x-content-type-options']).toBe('nosniff');
      expect(page.headers['x-frame-options']).toBe('DENY');
      expect(page.headers['referrer-policy']).toBe('no-referrer');
      // The shell holds no data: nothing of any tenant's is in it, signed in or not.
      expect(page.body).not.toMatch(/acme|globex/);
      expect(page.body).not.toMatch(/<script>|<style>|\son[a-z]+=/i);
    }
    // The CSP: no inline script, no wildcard source, no framing.
    expect(CONSOLE_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
    expect(CONSOLE_CSP).toContain("frame-ancestors 'none'");
  });

  it('serves its files with their types and validators, and nothing else from the folder', async () => {
    const script = await inject('GET', '/ui/assets/app.js');
    expect(script.statusCode).toBe(200);
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(script.headers['x-content-type-options']).toBe('nosniff');
    const again = await inject('GET', '/ui/assets/app.js', { 'if-none-match': String(script.headers.etag) });
    expect(again.statusCode).toBe(304);
    expect((await inject('GET', '/ui/assets/console.css')).headers['content-type']).toBe('text/css; charset=utf-8');
    for (const name of ['tsconfig.json', 'index.html', '..%2Fpackage.json', 'nope.js', '%00']) {
      const answer = await inject('GET', `/ui/assets/${name}`);
      expect(answer.statusCode, name).toBeGreaterThanOrEqual(400);
      expect(answer.statusCode, name).toBeLessThan(500);
    }
  });

  it('guards /ui against DNS rebinding as every route', async () => {
    const open = await startApi(platform, database.url, { mcp: { loopbackOnly: true } });
    try {
      const answer = await open.app.inject({ method: 'GET', url: '/ui', headers: { host: 'evil.example' } });
      expectProblem(answer, 403, 'TG_HOST_NOT_ALLOWED');
    } finally {
      await open.close();
    }
  });
});
