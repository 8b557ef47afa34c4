import { randomBytes } from 'node:crypto';
import {
  CONSOLE_SESSION_MAX_MS,
  type ConsoleSession,
  type Database,
  endConsoleSession,
  findConsoleSession,
  insertConsoleSession,
} from '@taskgate/db';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Kysely } from 'kysely';
import { Type } from 'typebox';
import type { Authenticator, Caller, SessionLookup } from '../http/auth.ts';
import { problemResponses } from '../http/problem.ts';
import { checkCsrf, checkSameOrigin } from './csrf.ts';

/** Over https the cookie is `__Host-` prefixed: Secure, Path=/, no Domain — a sibling host cannot set it. */
const SECURE_COOKIE = '__Host-taskgate_session';
const PLAIN_COOKIE = 'taskgate_session';

/**
 * The console's sign-in sessions: a token pasted into /ui/login becomes a random session id in an
 * HttpOnly cookie, and a row in console_sessions keyed by the id's SHA-256 (the token is never
 * stored, nor sent again). /v1 resolves the cookie to the same Caller the token would have been
 * (http/auth.ts), so the console is tenant-scoped exactly as the REST API is.
 */
export class ConsoleSessions implements SessionLookup {
  readonly #db: Kysely<Database>;
  readonly #now: () => number;

  constructor(db: Kysely<Database>, options: { readonly now?: () => number } = {}) {
    this.#db = db;
    this.#now = options.now ?? Date.now;
  }

  idOf(request: FastifyRequest): string | null {
    const header = request.headers.cookie;
    if (header === undefined) return null;
    const cookies = parseCookies(header);
    const id = cookies.get(SECURE_COOKIE) ?? cookies.get(PLAIN_COOKIE) ?? null;
    // 32 random bytes, base64url: anything else is no session of ours (and costs no query).
    return id !== null && SESSION_ID.test(id) ? id : null;
  }

  find(sessionId: string): Promise<ConsoleSession | null> {
    return findConsoleSession(this.#db, sessionId);
  }

  /** Opens a session for this caller; resolves with its id (the cookie's value) and CSRF token. */
  async open(
    caller: Caller,
    tokenDigest: string | null,
    tokenExpiresAt: number | null,
  ): Promise<{ readonly id: string; readonly session: ConsoleSession }> {
    const id = randomBytes(32).toString('base64url');
    const bound = this.#now() + CONSOLE_SESSION_MAX_MS;
    const session: ConsoleSession = {
      tenantId: caller.tenant,
      scopes: caller.scopes === null ? null : [...caller.scopes].sort(),
      tokenDigest,
      csrfToken: randomBytes(24).toString('base64url'),
      expiresAt: new Date(tokenExpiresAt === null ? bound : Math.min(bound, tokenExpiresAt)),
      operator: caller.operator === true,
    };
    await insertConsoleSession(this.#db, id, session);
    return { id, session };
  }

  end(sessionId: string): Promise<boolean> {
    return endConsoleSession(this.#db, sessionId);
  }
}

const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

function parseCookies(header: string): Map<string, string> {
  const cookies = new Map<string, string>();
  for (const part of header.split(';')) {
    const separator = part.indexOf('=');
    if (separator <= 0) continue;
    const name = part.slice(0, separator).trim();
    // The first of two cookies with one name wins, as browsers order the more specific first.
    if (!cookies.has(name)) cookies.set(name, part.slice(separator + 1).trim());
  }
  return cookies;
}

/** Whether the page signing in is served over https (directly, or through a proxy that terminates TLS). */
function overHttps(request: FastifyRequest): boolean {
  return request.protocol === 'https' || (request.headers.origin ?? '').startsWith('https:');
}

function setCookie(reply: FastifyReply, secure: boolean, value: string, maxAgeSeconds: number): void {
  const name = secure ? SECURE_COOKIE : PLAIN_COOKIE;
  const attributes = [`${name}=${value}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', `Max-Age=${maxAgeSeconds}`];
  if (secure) attributes.push('Secure');
  reply.header('set-cookie', attributes.join('; '));
}

/** A live session as GET and POST /ui/session answer it. */
function sessionJson(session: ConsoleSession) {
  return {
    required: true,
    signedIn: true,
    tenant: session.operator ? null : session.tenantId,
    operator: session.operator,
    scopes: session.scopes === null ? null : [...session.scopes],
    csrf: session.csrfToken,
    expiresAt: session.expiresAt.toISOString(),
  };
}

const SessionSchema = Type.Object({
  required: Type.Boolean({ description: 'whether this server asks for a token (false: loopback, no tokens)' }),
  signedIn: Type.Boolean(),
  tenant: Type.Union([Type.String(), Type.Null()], { description: "the session's tenant; null for an operator's" }),
  operator: Type.Boolean({
    description: 'signed in with an operator token: each request names its tenant (?tenant= or X-Taskgate-Tenant)',
  }),
  scopes: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description: "an OAuth token's scopes; null for a static token or no sign-in needed (everything the tenant may)",
  }),
  csrf: Type.Union([Type.String(), Type.Null()], {
    description: 'send as X-Taskgate-CSRF with every request that changes state',
  }),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/**
 * GET /ui/session (who am I, and the CSRF token), POST /ui/session (sign in with a token),
 * DELETE /ui/session (sign out). Sign-in and sign-out are state changes: same-origin only.
 */
export function registerSessionRoutes(
  app: FastifyInstance,
  options: { readonly auth: Authenticator; readonly sessions: ConsoleSessions | null },
): void {
  const { auth, sessions } = options;
  const tags = ['console'];

  app.get(
    '/ui/session',
    {
      schema: {
        summary: "The console's sign-in: who this browser is signed in as",
        tags,
        response: { 200: SessionSchema },
      },
    },
    async (request, reply) => {
      reply.header('cache-control', 'no-store');
      if (auth.acceptsUnauthenticated) {
        const caller = await auth.authenticate(request);
        return {
          required: false,
          signedIn: true,
          tenant: caller.tenant,
          operator: false,
          scopes: null,
          csrf: null,
          expiresAt: null,
        };
      }
      // As /v1 would judge the cookie: a session whose token was withdrawn is no session.
      const session = sessions === null ? null : await auth.liveSession(request);
      if (!session) {
        return {
          required: true,
          signedIn: false,
          tenant: null,
          operator: false,
          scopes: null,
          csrf: null,
          expiresAt: null,
        };
      }
      return sessionJson(session);
    },
  );

  app.post(
    '/ui/session',
    {
      schema: {
        summary: 'Sign in to the console with a token (static or OAuth access token); sets the session cookie',
        tags,
        body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 8192 }) }, { additionalProperties: false }),
        response: { 201: SessionSchema, ...problemResponses(400, 401, 403, 409) },
      },
    },
    async (request, reply) => {
      checkSameOrigin(request);
      if (sessions === null || auth.acceptsUnauthenticated) {
        throw new TaskgateError('TG_SIGN_IN_NOT_NEEDED', 'this server asks for no token: the console needs no sign-in');
      }
      const { token } = request.body as { token: string };
      const verified = await auth.verifyToken(token);
      const opened = await sessions.open(verified.caller, verified.tokenDigest, verified.expiresAt);
      const maxAge = Math.max(0, Math.floor((opened.session.expiresAt.getTime() - Date.now()) / 1000));
      setCookie(reply, overHttps(request), opened.id, maxAge);
      request.log.info(
        opened.session.operator ? { operator: true } : { tenant: opened.session.tenantId },
        'console sign-in',
      );
      reply.header('cache-control', 'no-store');
      return reply.code(201).send(sessionJson(opened.session));
    },
  );

  app.delete(
    '/ui/session',
    {
      schema: {
        summary: 'Sign out of the console: ends the session',
        tags,
        response: { 204: Type.Null(), ...problemResponses(403) },
      },
    },
    async (request, reply) => {
      const id = sessions?.idOf(request) ?? null;
      const session = id === null ? null : await sessions?.find(id);
      if (id !== null && session) {
        checkCsrf(request, session.csrfToken);
        await sessions?.end(id);
        request.log.info({ tenant: session.tenantId }, 'console sign-out');
      } else {
        checkSameOrigin(request);
      }
      setCookie(reply, overHttps(request), '', 0);
      return reply.code(204).send();
    },
  );
}
