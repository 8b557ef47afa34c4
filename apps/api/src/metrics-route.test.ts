import { TaskgateMetrics } from '@taskgate/metrics';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { type AuthenticatorOptions, createAuthenticator } from './http/auth.ts';
import { installProblemHandlers } from './http/problem.ts';
import { registerMetricsRoute } from './metrics-route.ts';

const apps: ReturnType<typeof Fastify>[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

const TENANT_TOKEN = 'tenant-token-0123456789';
const METRICS_TOKEN = 'metrics-token-0123456789';

/** GET /metrics as the API serves it, with the authenticator the API role builds from these options. */
function scrape(options: Partial<AuthenticatorOptions>) {
  const app = Fastify();
  apps.push(app);
  installProblemHandlers(app);
  const auth = createAuthenticator({ tokens: new Map(), unauthenticatedTenant: 'default', ...options });
  registerMetricsRoute(app, new TaskgateMetrics({ processMetrics: false }), auth);
  return (token?: string) =>
    app.inject({ method: 'GET', url: '/metrics', headers: token ? { authorization: `Bearer ${token}` } : {} });
}

describe('GET /metrics', () => {
  it('asks for the metrics token wherever the server asks callers for tokens, and is open only where the API is', async () => {
    // No token configured at all: the API itself is open (configuration allows that on loopback only).
    expect((await scrape({})()).statusCode).toBe(200);

    const tokensOnly = scrape({ tokens: new Map([[TENANT_TOKEN, 'acme']]) });
    const anonymous = await tokensOnly();
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['www-authenticate']).toBe('Bearer realm="taskgate"');
    expect(anonymous.json()).toMatchObject({
      code: 'TG_UNAUTHORIZED',
      detail: expect.stringContaining('TASKGATE_METRICS_TOKEN'),
    });
    // The figures cover every tenant: a tenant's token does not open them.
    expect((await tokensOnly(TENANT_TOKEN)).statusCode).toBe(401);

    const withMetricsToken = scrape({ tokens: new Map([[TENANT_TOKEN, 'acme']]), metricsToken: METRICS_TOKEN });
    expect((await withMetricsToken()).statusCode).toBe(401);
    expect((await withMetricsToken(TENANT_TOKEN)).statusCode).toBe(401);
    const scraped = await withMetricsToken(METRICS_TOKEN);
    expect(scraped.statusCode).toBe(200);
    expect(scraped.headers['content-type']).toContain('text/plain');
  });
});
