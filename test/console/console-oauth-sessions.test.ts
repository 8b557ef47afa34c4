import { ConsoleSessions, createAuthenticator, createTokenVerifier, SCOPE_GROUPS, scopeName } from '@taskgate/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { freePort } from '../support/free-port.ts';
import { type IdentityProvider, startIdentityProvider } from '../support/identity-provider.ts';
import { expectProblem } from '../support/problems.ts';
import { type Platform, serveApi, startPlatform } from '../support/task-platform.ts';

// Signing in to the console with an OAuth access token: the session keeps the token's tenant and
// scopes, and ends at the token's expiry at the latest.
const database = useTestDatabase();
let platform: Platform;
let idp: IdentityProvider;
let api: Awaited<ReturnType<typeof serveApi>>;
let resource: string;
let host: string;

beforeAll(async () => {
  platform = await startPlatform(database.url);
  const port = await freePort();
  resource = `http://127.0.0.1:${port}`;
  host = `127.0.0.1:${port}`;
  idp = await startIdentityProvider({ resources: [resource], scopes: SCOPE_GROUPS.map(scopeName) });
  const settings = { issuer: idp.issuer, resource, tenantClaim: 'tenant' };
  api = await serveApi(platform, database.url, {
    port,
    auth: createAuthenticator({
      tokens: new Map(),
      unauthenticatedTenant: 'default',
      oauth: { settings, verifier: createTokenVerifier(settings) },
      sessions: new ConsoleSessions(platform.db),
    }),
  });
});
afterAll(async () => {
  await api?.close();
  await idp?.stop();
  await platform?.stop();
});

/** `expiresIn` as jose reads it: a span ('120s'), or an absolute time in seconds since the epoch. */
const token = (scope: string, expiresIn: number | string = '1h') =>
  idp.mint({ sub: 'alice', aud: resource, scope, tenant: 'acme', client_id: 'console' }, { expiresIn });

async function signIn(accessToken: string) {
  return api.app.inject({
    method: 'POST',
    url: '/ui/session',
    headers: { host, origin: `http://${host}` },
    payload: { token: accessToken },
  });
}

describe('an OAuth access token', () => {
  it("opens a session with the token's tenant and scopes, never past the token's expiry", async () => {
    const before = Date.now();
    const answer = await signIn(await token(`${scopeName('tasks')} ${scopeName('tools')}`, '120s'));
    expect(answer.statusCode, answer.body).toBe(201);
    const body = answer.json();
    expect(body).toMatchObject({ tenant: 'acme', scopes: [scopeName('tasks'), scopeName('tools')] });
    const expiresAt = Date.parse(body.expiresAt);
    // The token lives 120 s: so does the session (not the 24 h a sign-in lasts at most).
    expect(expiresAt).toBeGreaterThan(before + 100_000);
    expect(expiresAt).toBeLessThanOrEqual(before + 121_000);
    const maxAge = Number(/Max-Age=(\d+)/.exec(String(answer.headers['set-cookie']))?.[1]);
    expect(maxAge).toBeGreaterThan(100);
    expect(maxAge).toBeLessThanOrEqual(121);
  });

  it("keeps the token's scopes: a session without taskgate:tasks may not read tasks", async () => {
    const answer = await signIn(await token(scopeName('tools')));
    expect(answer.statusCode).toBe(201);
    const cookie = String(answer.headers['set-cookie']).split(';')[0] as string;
    expectProblem(
      await api.app.inject({ method: 'GET', url: '/v1/tasks', headers: { host, cookie } }),
      403,
      'TG_INSUFFICIENT_SCOPE',
    );
    const full = await signIn(await token(`${scopeName('tasks')} ${scopeName('tools')}`));
    const fullCookie = String(full.headers['set-cookie']).split(';')[0] as string;
    expect(
      (await api.app.inject({ method: 'GET', url: '/v1/tasks', headers: { host, cookie: fullCookie } })).statusCode,
    ).toBe(200);
  });

  it('refuses an expired token, or one for another audience', async () => {
    expectProblem(
      await signIn(await token(scopeName('tasks'), Math.floor(Date.now() / 1000) - 120)),
      401,
      'TG_UNAUTHORIZED',
    );
    const other = await idp.mint({
      sub: 'alice',
      aud: 'http://elsewhere.example',
      scope: scopeName('tasks'),
      tenant: 'acme',
    });
    expectProblem(await signIn(other), 401, 'TG_UNAUTHORIZED');
  });
});
