import { ErrorCode, type JsonRpcError } from '@taskgate/protocol';
import type { FastifyRequest } from 'fastify';

export interface HttpGuardOptions {
  /** Browser origins allowed besides loopback ones (TASKGATE_ALLOWED_ORIGINS). */
  readonly allowedOrigins: readonly string[];
  /** The server is bound to loopback: the Host header must name loopback too (DNS rebinding). */
  readonly loopbackOnly: boolean;
}

export interface Refusal {
  readonly status: number;
  readonly error: JsonRpcError;
  readonly headers?: Record<string, string>;
}

const LOOPBACK_HOST = /^(localhost|127(\.\d{1,3}){3}|\[::1\])(:\d+)?$/i;

/**
 * The checks every MCP POST passes before its body is read: Origin (streamable-http "Security":
 * an invalid Origin is 403), Host when bound to loopback (a rebinding attacker's page sends its own
 * name), and Accept (the client must take both application/json and text/event-stream; else 406).
 */
export function checkHttpRequest(request: FastifyRequest, options: HttpGuardOptions): Refusal | null {
  const origin = request.headers.origin;
  if (origin !== undefined && !originAllowed(origin, options.allowedOrigins)) {
    return { status: 403, error: { code: ErrorCode.InvalidRequest, message: `origin ${origin} is not allowed` } };
  }
  if (options.loopbackOnly && !LOOPBACK_HOST.test(request.headers.host ?? '')) {
    return {
      status: 403,
      error: {
        code: ErrorCode.InvalidRequest,
        message: 'this server is bound to loopback; the Host header must be too',
      },
    };
  }
  if (request.method === 'POST' && !acceptsBoth(request.headers.accept)) {
    return {
      status: 406,
      error: {
        code: ErrorCode.InvalidRequest,
        message: 'the Accept header must list both application/json and text/event-stream',
      },
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

function acceptsBoth(accept: string | undefined): boolean {
  const types = (accept ?? '').split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  if (types.includes('*/*')) return true;
  return types.includes('application/json') && types.includes('text/event-stream');
}
