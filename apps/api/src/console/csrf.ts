import { timingSafeEqual } from 'node:crypto';
import { TaskgateError } from '@taskgate/errors';
import type { FastifyRequest } from 'fastify';

/** The header a console page sends its session's CSRF token in (GET /ui/session gives it). */
export const CSRF_HEADER = 'x-taskgate-csrf';

const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The console's defence against cross-site request forgery, beyond the cookie's SameSite=Strict
 * (which a browser without it, or a same-site sibling such as another port on localhost, does
 * not give): a request authenticated by a session cookie that changes state must come from a
 * page of this very origin (its Origin's host is the Host it was sent to) and carry the
 * session's CSRF token in X-Taskgate-CSRF — which only a page that could read GET /ui/session,
 * i.e. one of this origin, knows. Throws TG_CSRF_REFUSED otherwise. Bearer-token requests never
 * come here: a browser attaches no bearer token on its own.
 */
export function checkCsrf(request: FastifyRequest, csrfToken: string): void {
  if (SAFE_METHODS.has(request.method)) return;
  checkSameOrigin(request);
  const sent = request.headers[CSRF_HEADER];
  if (typeof sent !== 'string' || !sameSecret(sent, csrfToken)) {
    throw new TaskgateError(
      'TG_CSRF_REFUSED',
      `a signed-in request that changes state must send the session's ${CSRF_HEADER} header`,
    );
  }
}

/**
 * The request's Origin names the host it was sent to: it came from a page of this server. For
 * sign-in, where no session (and so no CSRF token) exists yet.
 */
export function checkSameOrigin(request: FastifyRequest): void {
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || origin === 'null') {
    throw new TaskgateError('TG_CSRF_REFUSED', 'a signed-in request that changes state must come with its Origin');
  }
  let host: string;
  try {
    host = new URL(origin).host;
  } catch {
    throw new TaskgateError('TG_CSRF_REFUSED', `the Origin ${JSON.stringify(origin)} is not a URL`);
  }
  if (host.toLowerCase() !== (request.headers.host ?? '').toLowerCase()) {
    throw new TaskgateError('TG_CSRF_REFUSED', `a request from ${origin} may not change state here`);
  }
}

function sameSecret(sent: string, expected: string): boolean {
  const a = Buffer.from(sent);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
