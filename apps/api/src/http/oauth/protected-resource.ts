import type { FastifyInstance } from 'fastify';
import { SCOPES_SUPPORTED } from './scopes.ts';
import type { OAuthSettings } from './token-verifier.ts';

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/**
 * RFC 9728 protected-resource metadata, at the root and in the path-suffixed form for /mcp
 * (§3.1; the MCP authorization spec's discovery tries the suffixed one first). Both describe the
 * one resource this server is, `settings.resource`: a token for it serves /mcp and /v1 alike.
 */
export function registerProtectedResourceRoutes(app: FastifyInstance, settings: OAuthSettings): void {
  const document = {
    resource: settings.resource,
    authorization_servers: [settings.issuer],
    scopes_supported: SCOPES_SUPPORTED,
    // RFC 6750 §2.1 only: never a form body or a query string (§2.3, which the MCP spec forbids).
    bearer_methods_supported: ['header'],
    resource_name: 'Taskgate',
  };
  for (const url of [WELL_KNOWN, `${WELL_KNOWN}/mcp`]) {
    app.get(url, { schema: { hide: true }, logLevel: 'warn' }, async (_request, reply) => {
      reply.header('cache-control', 'public, max-age=300');
      return document;
    });
  }
}

/** The metadata document a 401 or 403 on `path` points to (RFC 9728 §5.1). */
export function metadataUrlFor(settings: OAuthSettings, path: string): string {
  const origin = new URL(settings.resource).origin;
  return path === '/mcp' || path.startsWith('/mcp?') ? `${origin}${WELL_KNOWN}/mcp` : `${origin}${WELL_KNOWN}`;
}

export interface Challenge {
  readonly scopes: readonly string[];
  /** RFC 6750 §3.1: absent when no token was sent. */
  readonly error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  readonly description?: string;
}

/** A WWW-Authenticate value (RFC 6750 §3, RFC 9728 §5.1). */
export function bearerChallenge(resourceMetadata: string | null, challenge: Challenge): string {
  const params: string[] = [];
  if (resourceMetadata !== null) params.push(`resource_metadata="${resourceMetadata}"`);
  else params.push('realm="taskgate"');
  if (challenge.scopes.length > 0) params.push(`scope="${challenge.scopes.join(' ')}"`);
  if (challenge.error) params.push(`error="${challenge.error}"`);
  if (challenge.description) params.push(`error_description="${quotable(challenge.description)}"`);
  return `Bearer ${params.join(', ')}`;
}

/** RFC 6750 §3: error_description is printable ASCII without `"` and `\`. */
function quotable(text: string): string {
  return text.replace(/[^\x20-\x7e]|["\\]/g, "'");
}
