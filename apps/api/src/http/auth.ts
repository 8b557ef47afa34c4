import { createHash } from 'node:crypto';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';

/**
 * Who is calling: every query a request makes is scoped to this tenant. `acceptsUnauthenticated`
 * says the resolver lets calls without a token through (then every route also defends against DNS
 * rebinding, see request-guards.ts).
 */
export type TenantResolver = ((request: FastifyRequest) => string) & { readonly acceptsUnauthenticated?: boolean };

/**
 * Bearer tokens from TASKGATE_TOKENS map to tenants. Tokens are compared by their SHA-256, so the
 * lookup's timing says nothing about how much of a wrong token was right. With no tokens
 * configured every call is tenant `unauthenticatedTenant` — allowed only because configuration
 * refuses to bind beyond loopback without tokens.
 */
export function bearerTenants(tokens: ReadonlyMap<string, string>, unauthenticatedTenant: string): TenantResolver {
  if (tokens.size === 0) return Object.assign(() => unauthenticatedTenant, { acceptsUnauthenticated: true });
  const byDigest = new Map([...tokens].map(([token, tenant]) => [digest(token), tenant]));
  return (request) => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (!match) {
      throw new TaskgateError(
        'TG_UNAUTHORIZED',
        'send Authorization: Bearer <token> with a token from TASKGATE_TOKENS',
      );
    }
    const tenant = byDigest.get(digest(match[1] as string));
    if (!tenant) throw new TaskgateError('TG_UNAUTHORIZED', 'the bearer token is not valid');
    return tenant;
  };
}

const tenants = new WeakMap<FastifyRequest, string>();

/**
 * Resolves the tenant of every request in `scope` as it arrives (onRequest), before its body is
 * read or validated: a caller without a valid token learns nothing about what a valid body looks
 * like — 401 comes before any 400, 413 or 415.
 */
export function authenticateScope(scope: FastifyInstance, tenant: TenantResolver): void {
  scope.addHook('onRequest', async (request) => {
    tenants.set(request, tenant(request));
  });
}

/** The tenant authenticateScope resolved for this request. */
export function tenantOf(request: FastifyRequest): string {
  const tenant = tenants.get(request);
  if (tenant === undefined)
    throw new Error(`${request.method} ${request.url} is served outside an authenticated scope`);
  return tenant;
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
