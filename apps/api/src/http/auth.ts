import { createHash, timingSafeEqual } from 'node:crypto';
import type { ConsoleSession } from '@taskgate/db';
import { isTaskgateError, TaskgateError } from '@taskgate/errors';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { checkCsrf } from '../console/csrf.ts';
import { bearerChallenge, type Challenge, metadataUrlFor } from './oauth/protected-resource.ts';
import { MCP_SCOPES, restScopeOf, type ScopeGroup, scopeName } from './oauth/scopes.ts';
import { IssuerUnavailable, type OAuthSettings, TokenRejected, type TokenVerifier } from './oauth/token-verifier.ts';
import { problem, sendProblem } from './problem.ts';
import { TENANT_PATTERN } from './tenant-name.ts';

/**
 * An operator's tenant before its request names one: not a tenant name (TENANT_PATTERN admits no
 * '*'), so a query scoped to it finds nothing; tenantOf refuses it (TG_TENANT_REQUIRED).
 */
export const NO_TENANT = '*';

/** Who is calling. Every query a request makes is scoped to `tenant`. */
export interface Caller {
  readonly tenant: string;
  /**
   * An operator token (TASKGATE_OPERATOR_TOKENS): acts for the tenant each REST request names
   * (X-Taskgate-Tenant, or the `tenant` query parameter an EventSource can carry), with every
   * scope. Never an MCP caller.
   */
  readonly operator?: true;
  /** An OAuth token's scopes; null for a static token, which may do everything its tenant can. */
  readonly scopes: ReadonlySet<string> | null;
  /**
   * Set when the request was authenticated by a console session's cookie rather than a bearer
   * token: a browser sends the cookie on its own, so a state change also needs the session's CSRF
   * token and a same-origin Origin (console/csrf.ts).
   */
  readonly session?: { readonly csrfToken: string };
}

/** Where console sessions are looked up (console_sessions; console/console-sessions.ts). */
export interface SessionLookup {
  /** The session id in this request's cookie, or null. */
  idOf(request: FastifyRequest): string | null;
  find(sessionId: string): Promise<ConsoleSession | null>;
}

/**
 * How requests prove who they are: static bearer tokens (TASKGATE_TOKENS, for services), OAuth
 * access tokens (TASKGATE_OAUTH_*, for people's clients), both, or — on loopback only, which
 * configuration enforces — nothing at all. Refusals are TaskgateErrors whose `details.challenge`
 * is the WWW-Authenticate value to send.
 */
export interface Authenticator {
  /** No token needed (then every route also defends against DNS rebinding, see request-guards.ts). */
  readonly acceptsUnauthenticated: boolean;
  readonly oauth: OAuthSettings | null;
  /**
   * `sessions`: a console session's cookie may stand for the token (the REST API's routes, which
   * check CSRF for it). /mcp never takes one: an MCP client sends its token, and a browser's
   * cookie must not make a page on another origin an MCP client of this tenant.
   */
  authenticate(
    request: FastifyRequest,
    options?: { readonly sessions?: boolean; readonly operators?: boolean },
  ): Promise<Caller>;
  /**
   * The console session this request's cookie names while it still stands: signed in, not
   * expired, and its static or operator token still configured. GET /ui/session answers from it.
   */
  liveSession(request: FastifyRequest): Promise<ConsoleSession | null>;
  /** Throws TG_INSUFFICIENT_SCOPE (403) unless the caller holds every group's scope. */
  authorize(request: FastifyRequest, caller: Caller, groups: readonly ScopeGroup[]): void;
  /** GET /metrics: its own token or scope, never a tenant's (the figures cover every tenant). */
  authenticateMetrics(request: FastifyRequest): Promise<void>;
  /**
   * A token pasted into /ui/login, judged as a bearer token would be (no request around it):
   * the caller it stands for, and when it stops being valid (null: a static token, no end).
   */
  verifyToken(
    token: string,
  ): Promise<{ readonly caller: Caller; readonly expiresAt: number | null; readonly tokenDigest: string | null }>;
}

export interface AuthenticatorOptions {
  /** bearer token → tenant. */
  readonly tokens: ReadonlyMap<string, string>;
  /** TASKGATE_OPERATOR_TOKENS. */
  readonly operatorTokens?: ReadonlySet<string>;
  /** The tenant of every call when neither tokens nor OAuth are configured. */
  readonly unauthenticatedTenant: string;
  readonly oauth?: { readonly settings: OAuthSettings; readonly verifier: TokenVerifier } | null;
  /** TASKGATE_METRICS_TOKEN: the token a scraper sends to /metrics. */
  readonly metricsToken?: string | null;
  /** Console sessions: a request without an Authorization header may carry a session's cookie. */
  readonly sessions?: SessionLookup | null;
}

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function createAuthenticator(options: AuthenticatorOptions): Authenticator {
  const oauth = options.oauth ?? null;
  const byDigest = new Map([...options.tokens].map(([token, tenant]) => [digest(token), tenant]));
  const operatorDigests = new Set([...(options.operatorTokens ?? [])].map(digest));
  const metricsDigest = options.metricsToken ? Buffer.from(digest(options.metricsToken), 'hex') : null;
  const open = byDigest.size === 0 && operatorDigests.size === 0 && oauth === null;
  const operatorCaller: Caller = Object.freeze({ tenant: NO_TENANT, scopes: null, operator: true });
  /** Every caller of an open server: one object, not one per request. */
  const openCaller: Caller = Object.freeze({ tenant: options.unauthenticatedTenant, scopes: null });

  const refuse = (
    request: FastifyRequest,
    code: 'TG_UNAUTHORIZED' | 'TG_TOKEN_IN_QUERY',
    message: string,
    challenge: Challenge,
  ) => new TaskgateError(code, message, { details: { challenge: challengeFor(oauth, request, challenge) } });
  const wanted = (request: FastifyRequest): readonly string[] =>
    oauth === null
      ? []
      : request.routeOptions.url === '/mcp'
        ? MCP_SCOPES.map(scopeName)
        : [scopeName(restScopeOf(request.method, request.routeOptions.url))];

  /** The bearer token sent, or null; a token in the query string is refused (RFC 6750 §2.3, MCP "Access Token Usage"). */
  const tokenOf = (request: FastifyRequest): string | null => {
    const query = request.query as Record<string, unknown> | undefined;
    if (query !== null && typeof query === 'object' && 'access_token' in query) {
      throw refuse(request, 'TG_TOKEN_IN_QUERY', 'send the token in the Authorization header, never in the URL', {
        scopes: [],
        error: 'invalid_request',
        description: 'access_token in the query string',
      });
    }
    const header = request.headers.authorization;
    if (header === undefined) return null;
    const match = BEARER.exec(header);
    if (!match) {
      throw refuse(request, 'TG_UNAUTHORIZED', 'the Authorization header is not "Bearer <token>"', {
        scopes: wanted(request),
        error: 'invalid_request',
      });
    }
    return match[1] as string;
  };

  const authenticate = async (
    request: FastifyRequest,
    how: { readonly sessions?: boolean; readonly operators?: boolean } = {},
  ): Promise<Caller> => {
    if (open) {
      tokenOf(request);
      return openCaller;
    }
    const token = tokenOf(request);
    if (token === null) {
      const session = how.sessions === true ? await sessionCaller(request) : null;
      if (session !== null) return session;
      throw refuse(
        request,
        'TG_UNAUTHORIZED',
        oauth
          ? 'send Authorization: Bearer <token> with an access token from the authorization server'
          : 'send Authorization: Bearer <token> with a token from TASKGATE_TOKENS',
        { scopes: wanted(request) },
      );
    }
    const tokenDigest = digest(token);
    const tenant = byDigest.get(tokenDigest);
    if (tenant !== undefined) return { tenant, scopes: null };
    if (operatorDigests.has(tokenDigest)) {
      if (how.operators === true) return operatorCaller;
      // /mcp (an MCP session belongs to one tenant, and an operator is none), /metrics.
      throw refuse(
        request,
        'TG_UNAUTHORIZED',
        "an operator token acts over the REST API (/v1) and the console only; an MCP client sends a tenant's token",
        { scopes: wanted(request), error: 'invalid_token' },
      );
    }
    if (!oauth) throw refuse(request, 'TG_UNAUTHORIZED', 'the bearer token is not valid', { scopes: [] });
    try {
      const verified = await oauth.verifier.verify(token);
      return { tenant: verified.tenant, scopes: verified.scopes };
    } catch (error) {
      if (error instanceof TokenRejected) {
        throw refuse(request, 'TG_UNAUTHORIZED', error.message, {
          scopes: wanted(request),
          error: 'invalid_token',
          description: error.message,
        });
      }
      if (error instanceof IssuerUnavailable) {
        throw new TaskgateError('TG_ISSUER_UNAVAILABLE', error.message);
      }
      throw error;
    }
  };

  /** The live session this request's cookie names, or null (none, ended, or its token withdrawn). */
  const liveSession = async (request: FastifyRequest): Promise<ConsoleSession | null> => {
    const sessions = options.sessions;
    const id = sessions?.idOf(request) ?? null;
    if (sessions === undefined || sessions === null || id === null) return null;
    const session = await sessions.find(id);
    if (session === null) return null;
    // A static token taken out of TASKGATE_TOKENS (or an operator's out of TASKGATE_OPERATOR_TOKENS)
    // ends the sessions it opened.
    if (session.operator) {
      return session.tokenDigest !== null && operatorDigests.has(session.tokenDigest) ? session : null;
    }
    return session.tokenDigest !== null && !byDigest.has(session.tokenDigest) ? null : session;
  };

  /** The caller a console session's cookie stands for, or null (no cookie, or no live session). */
  const sessionCaller = async (request: FastifyRequest): Promise<Caller | null> => {
    const session = await liveSession(request);
    if (session === null) return null;
    if (session.operator) return { ...operatorCaller, session: { csrfToken: session.csrfToken } };
    return {
      tenant: session.tenantId,
      scopes: session.scopes === null ? null : new Set(session.scopes),
      session: { csrfToken: session.csrfToken },
    };
  };

  const verifyToken = async (token: string) => {
    const tokenDigest = digest(token);
    const tenant = byDigest.get(tokenDigest);
    if (tenant !== undefined) return { caller: { tenant, scopes: null }, expiresAt: null, tokenDigest };
    if (operatorDigests.has(tokenDigest)) return { caller: operatorCaller, expiresAt: null, tokenDigest };
    if (!oauth) throw new TaskgateError('TG_UNAUTHORIZED', 'the token is not valid');
    try {
      const verified = await oauth.verifier.verifyUncached(token);
      return {
        caller: { tenant: verified.token.tenant, scopes: verified.token.scopes },
        expiresAt: verified.expiresAt,
        tokenDigest: null,
      };
    } catch (error) {
      if (error instanceof TokenRejected) throw new TaskgateError('TG_UNAUTHORIZED', error.message);
      if (error instanceof IssuerUnavailable) throw new TaskgateError('TG_ISSUER_UNAVAILABLE', error.message);
      throw error;
    }
  };

  const authorize = (request: FastifyRequest, caller: Caller, groups: readonly ScopeGroup[]): void => {
    if (caller.scopes === null) return;
    const missing = groups.map(scopeName).filter((scope) => !caller.scopes?.has(scope));
    if (missing.length === 0) return;
    // One challenge with every scope this request needs (the spec's "Server Scope Management").
    const needed = [...new Set(groups.map(scopeName))];
    throw new TaskgateError('TG_INSUFFICIENT_SCOPE', `the token lacks the scope ${missing.join(' and ')}`, {
      details: {
        challenge: challengeFor(oauth, request, {
          scopes: needed,
          error: 'insufficient_scope',
          description: `needs ${needed.join(' ')}`,
        }),
      },
    });
  };

  return {
    acceptsUnauthenticated: open,
    oauth: oauth?.settings ?? null,
    authenticate,
    authorize,
    verifyToken,
    liveSession,
    async authenticateMetrics(request) {
      // Open exactly where the API is: with no token configured at all (loopback only). A server
      // that asks callers for tokens asks scrapers too, even when no metrics token is configured:
      // otherwise an API on 0.0.0.0 with TASKGATE_TOKENS set showed its figures to anyone.
      if (open && metricsDigest === null) return;
      const token = tokenOf(request);
      const challenge = { scopes: oauth ? [scopeName('metrics')] : [] };
      if (metricsDigest === null && oauth === null) {
        throw refuse(
          request,
          'TG_UNAUTHORIZED',
          'this server requires a token for /metrics: set TASKGATE_METRICS_TOKEN and send it as Authorization: Bearer <metrics token>',
          challenge,
        );
      }
      if (token === null)
        throw refuse(request, 'TG_UNAUTHORIZED', 'send Authorization: Bearer <metrics token>', challenge);
      if (metricsDigest !== null && timingSafeEqual(Buffer.from(digest(token), 'hex'), metricsDigest)) return;
      if (oauth === null || byDigest.has(digest(token))) {
        throw refuse(request, 'TG_UNAUTHORIZED', 'this is not the metrics token (TASKGATE_METRICS_TOKEN)', challenge);
      }
      authorize(request, await authenticate(request), ['metrics']);
    },
  };
}

function challengeFor(oauth: AuthenticatorOptions['oauth'], request: FastifyRequest, challenge: Challenge): string {
  return bearerChallenge(oauth ? metadataUrlFor(oauth.settings, request.url) : null, challenge);
}

/** The WWW-Authenticate value a refusal carries, if it is one. */
export function challengeOf(error: unknown): string | null {
  if (!(error instanceof TaskgateError)) return null;
  const challenge = error.details.challenge;
  return typeof challenge === 'string' ? challenge : null;
}

const callers = new WeakMap<FastifyRequest, Caller>();

/**
 * Resolves the caller of every request in `scope` as it arrives (onRequest), before its body is
 * read or validated: a caller without a valid token learns nothing about what a valid body looks
 * like — 401 comes before any 400, 413 or 415. The route's scope group is checked here too (403).
 */
export function authenticateScope(scope: FastifyInstance, auth: Authenticator): void {
  scope.addHook('onRequest', async (request, reply) => {
    try {
      const caller = await auth.authenticate(request, { sessions: true, operators: true });
      auth.authorize(request, caller, [restScopeOf(request.method, request.routeOptions.url)]);
      if (caller.session !== undefined) checkCsrf(request, caller.session.csrfToken);
      callers.set(request, actingFor(request, caller));
    } catch (error) {
      if (
        isTaskgateError(error, 'TG_CSRF_REFUSED') ||
        isTaskgateError(error, 'TG_OPERATOR_ONLY') ||
        isTaskgateError(error, 'TG_REQUEST_INVALID')
      )
        return sendProblem(reply, problem(error.code, error.message, request.url));
      const challenge = challengeOf(error);
      if (challenge === null || !(error instanceof TaskgateError)) throw error;
      reply.header('www-authenticate', challenge);
      return sendProblem(reply, problem(error.code, error.message, request.url));
    }
  });
}

export const TENANT_HEADER = 'x-taskgate-tenant';

/**
 * The caller as this request acts: an operator's, for the tenant the request names — by header,
 * or by the `tenant` query parameter (an EventSource sends no header), which is taken out of the
 * query so the route's own schema never sees it. Anyone else naming a tenant is refused, even
 * their own: a request that looks like it reaches another tenant must not quietly answer for one.
 */
function actingFor(request: FastifyRequest, caller: Caller): Caller {
  const header = request.headers[TENANT_HEADER];
  const query = request.query as Record<string, unknown> | null | undefined;
  const inQuery = query !== null && typeof query === 'object' && Object.hasOwn(query, 'tenant');
  if (header === undefined && !inQuery) return caller;
  if (caller.operator !== true) {
    throw new TaskgateError(
      'TG_OPERATOR_ONLY',
      "only an operator token (TASKGATE_OPERATOR_TOKENS) may name a tenant: a tenant's token acts for its own",
    );
  }
  const named = inQuery ? query?.tenant : header;
  if (header !== undefined && inQuery && header !== query?.tenant) {
    throw new TaskgateError('TG_REQUEST_INVALID', 'the tenant is named twice, differently (header and query)');
  }
  if (typeof named !== 'string' || !TENANT_PATTERN.test(named)) {
    throw new TaskgateError(
      'TG_REQUEST_INVALID',
      "the tenant named is not a tenant name (letters, digits, '.', '_', '-'; at most 63)",
    );
  }
  if (inQuery) delete query?.tenant;
  // What an operator changes in a tenant is said in the log, with the tenant (reads are not).
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    request.log.info({ operator: true, tenant: named, method: request.method, url: request.url }, 'operator request');
  }
  return { ...caller, tenant: named };
}

/** The tenant authenticateScope resolved for this request. */
export function tenantOf(request: FastifyRequest): string {
  const caller = callers.get(request);
  if (caller === undefined)
    throw new Error(`${request.method} ${request.url} is served outside an authenticated scope`);
  if (caller.tenant === NO_TENANT) {
    throw new TaskgateError(
      'TG_TENANT_REQUIRED',
      'an operator names the tenant it acts for: send X-Taskgate-Tenant: <tenant>, or ?tenant=<tenant>',
    );
  }
  return caller.tenant;
}

/** The caller authenticateScope resolved for this request (an operator's routes ask who it is). */
export function callerOf(request: FastifyRequest): Caller {
  const caller = callers.get(request);
  if (caller === undefined)
    throw new Error(`${request.method} ${request.url} is served outside an authenticated scope`);
  return caller;
}

function digest(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}
