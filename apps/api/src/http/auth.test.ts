import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { type AuthenticatorOptions, authenticateScope, createAuthenticator, tenantOf } from './auth.ts';
import { createTokenVerifier } from './oauth/token-verifier.ts';
import { installProblemHandlers } from './problem.ts';

const apps: ReturnType<typeof Fastify>[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

/** One authenticated route, /v1/tasks, answering the tenant it was called as. */
async function serve(options: AuthenticatorOptions) {
  const app = Fastify();
  apps.push(app);
  installProblemHandlers(app);
  await app.register(async (scope) => {
    authenticateScope(scope, createAuthenticator(options));
    scope.get('/v1/tasks', async (request) => ({ tenant: tenantOf(request) }));
  });
  return (headers: Record<string, string> = {}, url = '/v1/tasks') => app.inject({ method: 'GET', url, headers });
}

const TOKENS = new Map([['service-token-0123456789', 'acme']]);

describe('authenticateScope', () => {
  it('answers static tokens only with the plain challenge, and the tenant of a token it knows', async () => {
    const get = await serve({ tokens: TOKENS, unauthenticatedTenant: 'default' });
    const none = await get();
    expect(none.statusCode).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="taskgate"');
    expect(none.json().code).toBe('TG_UNAUTHORIZED');
    expect((await get({ authorization: 'Bearer wrong-token-0123456789' })).statusCode).toBe(401);
    const basic = await get({ authorization: 'Basic YWxhZGRpbjpvcGVuc2VzYW1l' });
    expect(basic.statusCode).toBe(401);
    expect(basic.headers['www-authenticate']).toContain('error="invalid_request"');
    expect((await get({ authorization: 'Bearer service-token-0123456789' })).json()).toEqual({ tenant: 'acme' });
    expect((await get({ authorization: 'bearer   service-token-0123456789 ' })).json()).toEqual({ tenant: 'acme' });
  });

  it('refuses access_token in the query string even with no authentication configured', async () => {
    const get = await serve({ tokens: new Map(), unauthenticatedTenant: 'default' });
    expect((await get()).json()).toEqual({ tenant: 'default' });
    const refused = await get({}, '/v1/tasks?access_token=abc');
    expect(refused.statusCode).toBe(400);
    expect(refused.json().code).toBe('TG_TOKEN_IN_QUERY');
  });

  it('answers 503 with Retry-After, not 401, when the issuer cannot be reached; static tokens still work', async () => {
    const settings = { issuer: 'http://127.0.0.1:9/', resource: 'https://taskgate.example.com', tenantClaim: 'tenant' };
    const refused = () => Promise.reject(new TypeError('fetch failed: connect ECONNREFUSED'));
    const get = await serve({
      tokens: TOKENS,
      unauthenticatedTenant: 'default',
      oauth: { settings, verifier: createTokenVerifier(settings, { fetch: refused as typeof fetch }) },
    });
    const answer = await get({ authorization: 'Bearer eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln' });
    expect(answer.statusCode).toBe(503);
    expect(answer.headers['retry-after']).toBe('5');
    expect(answer.json().code).toBe('TG_ISSUER_UNAVAILABLE');
    expect((await get({ authorization: 'Bearer service-token-0123456789' })).json()).toEqual({ tenant: 'acme' });
  });
});
