import { createHash } from 'node:crypto';
import { errors, type JSONWebKeySet, type JWTPayload, jwtVerify } from 'jose';
import { TENANT_PATTERN } from '../tenant-name.ts';
import { IssuerKeys } from './issuer-keys.ts';

/** Where tokens come from and what they must say (TASKGATE_OAUTH_*), validated by configuration. */
export interface OAuthSettings {
  /** The authorization server's issuer identifier: `iss` must equal it, its metadata must say it. */
  readonly issuer: string;
  /** This server's canonical resource URL (RFC 8707): `aud` must contain it. */
  readonly resource: string;
  /** The claim whose value is the tenant. */
  readonly tenantClaim: string;
}

export interface VerifiedToken {
  readonly tenant: string;
  readonly scopes: ReadonlySet<string>;
  readonly subject: string | null;
}

/** The token is not one this server accepts: answered 401 `invalid_token`, with why. */
export class TokenRejected extends Error {}

/** The issuer's metadata or keys cannot be read now: answered 503, the token is not judged. */
export class IssuerUnavailable extends Error {}

export interface TokenVerifierOptions {
  readonly fetch?: typeof fetch;
  /** For exp/nbf and the key cache. */
  readonly now?: () => number;
  /** Tolerance on exp and nbf, for clocks that disagree a little (default 30 s). */
  readonly leewaySeconds?: number;
  /** After a failed metadata fetch, requests are refused for this long before the next try (5 s). */
  readonly metadataRetryMs?: number;
  /** An unknown `kid` refetches the key set at most once per this long (30 s). */
  readonly jwksCooldownMs?: number;
  /** The key set is refetched when older than this (10 min). */
  readonly jwksMaxAgeMs?: number;
  /** Every fetch of metadata or keys gives up after this long (5 s). */
  readonly fetchTimeoutMs?: number;
}

export const DEFAULT_LEEWAY_SECONDS = 30;

/**
 * Asymmetric algorithms only: a symmetric one would let anyone holding the verification key sign,
 * and `none` signs nothing. A token whose header names another is refused before any key is used.
 */
const ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

/** Tokens larger than this are refused unparsed; no identity provider issues one. */
const MAX_TOKEN_LENGTH = 8_192;

export interface TokenVerifier {
  verify(token: string): Promise<VerifiedToken>;
  /** The checks themselves, every time (verify remembers an answer for up to a minute). */
  verifyUncached(token: string): Promise<{ readonly token: VerifiedToken; readonly expiresAt: number }>;
}

const VERIFIED_CACHE_MS = 60_000;
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * Access tokens as JWTs from one issuer (OAuth 2.1 §5.2, RFC 9068): the issuer's metadata (RFC
 * 8414, or OpenID discovery) names its key set; jose fetches and caches the keys, refetching on a
 * `kid` it does not know at most once per cooldown — so a rotation costs one fetch and a stream of
 * tokens with made-up `kid`s costs none.
 */
export function createTokenVerifier(settings: OAuthSettings, options: TokenVerifierOptions = {}): TokenVerifier {
  const fetchFn = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const timeoutMs = options.fetchTimeoutMs ?? 5_000;
  const retryMs = options.metadataRetryMs ?? 5_000;
  let keys: Promise<IssuerKeys> | null = null;
  let failedAt = Number.NEGATIVE_INFINITY;

  const keySet = (): Promise<IssuerKeys> => {
    if (keys) return keys;
    if (now() - failedAt < retryMs) {
      return Promise.reject(new IssuerUnavailable(`the issuer's metadata could not be read; retrying shortly`));
    }
    // One deadline for the first request's whole way to the keys: discovery, then the first read
    // of the key set (each with a timeout of its own held that request, and every one arriving
    // meanwhile, up to twice the documented bound). Later refetches get a timeout of their own.
    const deadline = AbortSignal.timeout(timeoutMs);
    keys = discoverJwksUri(settings.issuer, fetchFn, deadline)
      .then(async (jwksUri) => {
        const issuerKeys = new IssuerKeys({
          fetchKeySet: () => fetchKeySet(jwksUri, fetchFn, AbortSignal.timeout(timeoutMs)),
          now,
          cooldownMs: options.jwksCooldownMs ?? 30_000,
          maxAgeMs: options.jwksMaxAgeMs ?? 600_000,
        });
        await issuerKeys.prime(() => fetchKeySet(jwksUri, fetchFn, deadline));
        return issuerKeys;
      })
      .catch((error: unknown) => {
        keys = null;
        failedAt = now();
        throw new IssuerUnavailable(`the issuer's metadata or keys could not be read: ${reason(error)}`);
      });
    return keys;
  };

  // A verified token's answer holds until it expires: it is remembered (by digest) for at most a
  // minute and never past its exp, so the signature is checked about once a minute per token, not
  // once per request. Refusals are not remembered. Bounded: the oldest entry goes first.
  const verified = new Map<string, { readonly token: VerifiedToken; readonly until: number }>();

  return {
    async verify(token) {
      const digest = createHash('sha256').update(token).digest('base64url');
      const hit = verified.get(digest);
      if (hit !== undefined && hit.until > now()) return hit.token;
      if (hit !== undefined) verified.delete(digest);
      const fresh = await this.verifyUncached(token);
      if (verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value as string);
      verified.set(digest, { token: fresh.token, until: Math.min(fresh.expiresAt, now() + VERIFIED_CACHE_MS) });
      return fresh.token;
    },
    async verifyUncached(token) {
      if (token.length > MAX_TOKEN_LENGTH) throw new TokenRejected('the token is too long');
      if (token.split('.').length !== 3) throw new TokenRejected('the token is not a JWT');
      const jwks = await keySet();
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, jwks.resolve, {
          issuer: settings.issuer,
          audience: settings.resource,
          algorithms: ALGORITHMS,
          clockTolerance: options.leewaySeconds ?? DEFAULT_LEEWAY_SECONDS,
          currentDate: new Date(now()),
          requiredClaims: ['exp'],
        }));
      } catch (error) {
        throw classify(error);
      }
      return {
        token: {
          tenant: tenantOf(payload, settings.tenantClaim),
          scopes: scopesOf(payload),
          subject: typeof payload.sub === 'string' ? payload.sub : null,
        },
        expiresAt: (payload.exp as number) * 1000,
      };
    },
  };
}

/** RFC 8414 §3 (path inserted after the well-known prefix), then OpenID Connect Discovery 1.0. */
async function discoverJwksUri(issuer: string, fetchFn: typeof fetch, signal: AbortSignal): Promise<string> {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  const candidates = [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}/.well-known/openid-configuration${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
  // One deadline for all three (the caller's): with a timeout each, an issuer that never answers
  // held the first request (and every one arriving meanwhile) three times the documented bound.
  let last: unknown = null;
  for (const candidate of candidates) {
    let response: Response;
    try {
      response = await fetchFn(candidate, {
        headers: { accept: 'application/json' },
        signal,
        redirect: 'error',
      });
    } catch (error) {
      last = error;
      continue;
    }
    if (response.status === 404) {
      await response.body?.cancel();
      last = new Error(`${candidate} is 404`);
      continue;
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`${candidate} answered ${response.status}`);
    }
    const metadata = (await response.json()) as { issuer?: unknown; jwks_uri?: unknown };
    // RFC 8414 §3.3: the issuer in the document must be the one it was fetched for, or it is
    // another server's metadata (a misconfiguration an attacker could exploit).
    if (metadata.issuer !== issuer) {
      throw new Error(`${candidate} names issuer ${JSON.stringify(metadata.issuer)}, not ${issuer}`);
    }
    if (typeof metadata.jwks_uri !== 'string') throw new Error(`${candidate} has no jwks_uri`);
    return metadata.jwks_uri;
  }
  throw last instanceof Error ? last : new Error('no metadata document answered');
}

async function fetchKeySet(url: string, fetchFn: typeof fetch, signal: AbortSignal): Promise<JSONWebKeySet> {
  const response = await fetchFn(url, {
    headers: { accept: 'application/json, application/jwk-set+json' },
    signal,
    redirect: 'error',
  });
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(`${url} answered ${response.status}`);
  }
  const set = (await response.json()) as JSONWebKeySet;
  if (set === null || typeof set !== 'object' || !Array.isArray(set.keys)) throw new Error(`${url} is not a key set`);
  return set;
}

function classify(error: unknown): Error {
  if (error instanceof errors.JWTExpired) return new TokenRejected('the token has expired');
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'aud') return new TokenRejected('the token is for another audience');
    if (error.claim === 'iss') return new TokenRejected('the token is from another issuer');
    if (error.claim === 'nbf') return new TokenRejected('the token is not valid yet');
    return new TokenRejected(`the token's ${error.claim} claim is not valid`);
  }
  if (error instanceof errors.JWKSNoMatchingKey) {
    return new TokenRejected('the token is signed by a key the issuer does not publish');
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) return new TokenRejected('the signature is not valid');
  if (error instanceof errors.JOSEAlgNotAllowed) return new TokenRejected('the signing algorithm is not accepted');
  if (error instanceof errors.JWKSMultipleMatchingKeys) {
    return new TokenRejected('the token names no key the issuer publishes unambiguously');
  }
  if (
    error instanceof errors.JWSInvalid ||
    error instanceof errors.JWTInvalid ||
    error instanceof errors.JOSENotSupported
  ) {
    return new TokenRejected('the token is not a valid JWT');
  }
  // Everything else is the key set's fetch: a timeout, a refused connection, a non-200 answer.
  return new IssuerUnavailable(`the issuer's keys could not be read: ${reason(error)}`);
}

function tenantOf(payload: JWTPayload, claim: string): string {
  const value = payload[claim];
  if (value === undefined) throw new TokenRejected(`the token has no ${claim} claim (the tenant)`);
  if (typeof value !== 'string' || !TENANT_PATTERN.test(value)) {
    throw new TokenRejected(`the token's ${claim} claim is not a tenant name`);
  }
  return value;
}

/** RFC 9068 §2.2.3 `scope` (space-separated); Entra ID's `scp` (a string or an array) as well. */
function scopesOf(payload: JWTPayload): ReadonlySet<string> {
  const scopes = new Set<string>();
  for (const value of [payload.scope, payload.scp]) {
    if (typeof value === 'string') for (const scope of value.split(' ')) if (scope) scopes.add(scope);
    if (Array.isArray(value)) for (const scope of value) if (typeof scope === 'string') scopes.add(scope);
  }
  return scopes;
}

function reason(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
