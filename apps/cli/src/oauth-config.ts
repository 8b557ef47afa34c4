import type { OAuthSettings } from '@taskgate/api';

type Problem = (field: string, message: string) => void;

const CLAIM_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/;
const LOOPBACK_NAME = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

/**
 * TASKGATE_OAUTH_ISSUER, TASKGATE_OAUTH_RESOURCE and TASKGATE_OAUTH_TENANT_CLAIM: all or none of
 * the first two. Both are URLs in the form the tokens must carry them (`iss` and `aud` are compared
 * as strings, RFC 9068 §4): https, or http on loopback for a local provider; no query, no fragment.
 */
export function parseOAuth(
  issuerRaw: string | undefined,
  resourceRaw: string | undefined,
  claimRaw: string | undefined,
  problem: Problem,
): OAuthSettings | null {
  if (issuerRaw === undefined && resourceRaw === undefined) {
    if (claimRaw !== undefined) problem('TASKGATE_OAUTH_TENANT_CLAIM', 'is set without TASKGATE_OAUTH_ISSUER');
    return null;
  }
  if (issuerRaw === undefined) {
    problem('TASKGATE_OAUTH_ISSUER', 'must be set with TASKGATE_OAUTH_RESOURCE (the authorization server)');
    return null;
  }
  if (resourceRaw === undefined) {
    problem(
      'TASKGATE_OAUTH_RESOURCE',
      "must be set with TASKGATE_OAUTH_ISSUER (this server's URL, the tokens' audience)",
    );
    return null;
  }
  const issuer = parseUrl(issuerRaw, 'TASKGATE_OAUTH_ISSUER', problem);
  const resource = parseUrl(resourceRaw, 'TASKGATE_OAUTH_RESOURCE', problem);
  const tenantClaim = claimRaw ?? 'tenant';
  if (!CLAIM_PATTERN.test(tenantClaim)) {
    problem(
      'TASKGATE_OAUTH_TENANT_CLAIM',
      `must be a claim name like tenant or org_id (got ${JSON.stringify(tenantClaim)})`,
    );
  }
  if (issuer === null || resource === null) return null;
  return { issuer, resource, tenantClaim };
}

function parseUrl(raw: string, field: string, problem: Problem): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    problem(field, `must be a URL like https://auth.example.com (got ${JSON.stringify(raw)})`);
    return null;
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && LOOPBACK_NAME.test(url.hostname))) {
    problem(field, `must be https (http only on loopback) (got ${url.protocol.replace(':', '')})`);
    return null;
  }
  if (url.search !== '' || url.hash !== '' || raw.includes('#') || raw.includes('?')) {
    problem(field, 'must have no query and no fragment');
    return null;
  }
  if (url.username !== '' || url.password !== '') {
    problem(field, 'must not carry a user name or password');
    return null;
  }
  // Kept as written: tokens carry the identifier byte for byte. Only a bare origin's trailing "/"
  // is dropped, the form the MCP spec asks for ("Canonical Server URI").
  return url.pathname === '/' && raw.endsWith('/') ? raw.slice(0, -1) : raw;
}
