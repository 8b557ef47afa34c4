import { createHash } from 'node:crypto';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyRequest } from 'fastify';

/** Who is calling: every query a request makes is scoped to this tenant. */
export type TenantResolver = (request: FastifyRequest) => string;

/**
 * Bearer tokens from TASKGATE_TOKENS map to tenants. Tokens are compared by their SHA-256, so the
 * lookup's timing says nothing about how much of a wrong token was right. With no tokens
 * configured every call is tenant `unauthenticatedTenant` — allowed only because configuration
 * refuses to bind beyond loopback without tokens.
 */
export function bearerTenants(tokens: ReadonlyMap<string, string>, unauthenticatedTenant: string): TenantResolver {
  if (tokens.size === 0) return () => unauthenticatedTenant;
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

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
