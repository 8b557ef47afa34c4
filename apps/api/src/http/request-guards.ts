import { errorRegistry, type ErrorCode as TaskgateCode } from '@taskgate/errors';
import { ErrorCode, errorResponse } from '@taskgate/protocol';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { problem, sendProblem } from './problem.ts';

export interface RequestGuardOptions {
  /** Browser origins allowed besides loopback ones (TASKGATE_ALLOWED_ORIGINS). */
  readonly allowedOrigins: readonly string[];
  /** The server is bound to loopback: the Host header must name loopback too. */
  readonly loopbackOnly: boolean;
  /** Calls without a token are served (as the unauthenticated tenant). */
  readonly acceptsUnauthenticated: boolean;
}

export interface GuardRefusal {
  readonly code: Extract<
    TaskgateCode,
    'TG_HOST_NOT_ALLOWED' | 'TG_ORIGIN_NOT_ALLOWED' | 'TG_HTTP_MALFORMED' | 'TG_HEADER_REPEATED'
  >;
  readonly message: string;
}

/**
 * Header lines Node would pass on ambiguous. Node keeps the first of two `Authorization` or `Host`
 * lines and drops the rest, so a request with two credentials was served as the first one's
 * tenant; and its own answer to an HTTP/1.1 request without Host (`requireHostHeader`, turned off
 * in server.ts so this one answers instead) is a bare 400 with an empty body. RFC 9112 section 3.2:
 * a server MUST answer 400 to an HTTP/1.1 request that lacks Host or has more than one Host line.
 */
export function checkHeaderLines(request: FastifyRequest): GuardRefusal | null {
  const raw = request.raw.rawHeaders;
  let hosts = 0;
  let credentials = 0;
  // rawHeaders alternates name and value.
  for (let index = 0; index < raw.length; index += 2) {
    const name = raw[index] as string;
    if (name.length === 4 && name.toLowerCase() === 'host') hosts++;
    else if (name.length === 13 && name.toLowerCase() === 'authorization') credentials++;
  }
  if (hosts > 1) return { code: 'TG_HTTP_MALFORMED', message: 'the request has more than one Host header' };
  if (hosts === 0 && request.raw.httpVersion === '1.1') {
    return { code: 'TG_HTTP_MALFORMED', message: 'an HTTP/1.1 request must have a Host header' };
  }
  if (credentials > 1) {
    return {
      code: 'TG_HEADER_REPEATED',
      message: 'the request has more than one Authorization header; send one set of credentials',
    };
  }
  return null;
}

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?$/i;

/**
 * The DNS-rebinding defence, one check for every route. A page on evil.example that re-resolves
 * its name to 127.0.0.1 reaches a loopback server from the victim's browser, but its requests
 * still carry `Host: evil.example` (and, for fetch/XHR with a body, `Origin: http://evil.example`).
 * So while the server is bound to loopback or serves unauthenticated calls — the cases where
 * reaching the socket is all it takes — Host must name loopback and an Origin, if sent, must be a
 * loopback origin or an allowed one. /mcp checks Origin in every mode: streamable-http "Security"
 * says servers MUST validate it on all incoming connections.
 */
export function checkRequestOrigin(
  request: FastifyRequest,
  options: RequestGuardOptions,
  alwaysCheckOrigin: () => boolean,
): GuardRefusal | null {
  const exposed = options.loopbackOnly || options.acceptsUnauthenticated;
  const origin = request.headers.origin;
  if (origin !== undefined && (exposed || alwaysCheckOrigin()) && !originAllowed(origin, options.allowedOrigins)) {
    return { code: 'TG_ORIGIN_NOT_ALLOWED', message: `origin ${origin} is not allowed` };
  }
  if (exposed && !LOOPBACK_HOST.test(request.headers.host ?? '')) {
    return {
      code: 'TG_HOST_NOT_ALLOWED',
      message: options.loopbackOnly
        ? 'this server is bound to loopback; the Host header must be too'
        : 'this server accepts unauthenticated calls; the Host header must name loopback',
    };
  }
  return null;
}

function originAllowed(origin: string, allowed: readonly string[]): boolean {
  if (allowed.includes(origin)) return true;
  try {
    const url = new URL(origin);
    return (url.protocol === 'http:' || url.protocol === 'https:') && LOOPBACK_HOST.test(url.host);
  } catch {
    return false;
  }
}

/**
 * The guard on every route (a root onRequest hook, so unknown paths are covered too): 400 for
 * ambiguous header lines, 403 for a foreign Host or Origin, as problem+json, or on /mcp the
 * JSON-RPC error body that endpoint answers with.
 */
export function installRequestGuard(app: FastifyInstance, options: RequestGuardOptions): void {
  // A callback hook, and the route asked for only when it matters (an Origin to check, a
  // refusal to shape): every request of every route passes here.
  app.addHook('onRequest', (request, reply, done) => {
    const isMcp = () => request.routeOptions.url === '/mcp';
    const refused = checkHeaderLines(request) ?? checkRequestOrigin(request, options, isMcp);
    if (!refused) {
      done();
      return;
    }
    // A request whose framing was wrong is not one to keep the connection for.
    if (refused.code === 'TG_HTTP_MALFORMED') reply.header('connection', 'close');
    if (!isMcp()) {
      sendProblem(reply, problem(refused.code, refused.message, request.url));
      return;
    }
    reply
      .code(errorRegistry[refused.code].httpStatus)
      .type('application/json')
      .send(
        errorResponse(null, { code: ErrorCode.InvalidRequest, message: refused.message, data: { code: refused.code } }),
      );
  });
}
