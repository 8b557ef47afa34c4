import { ErrorCode, type JsonRpcError } from '@taskgate/protocol';
import type { FastifyRequest } from 'fastify';

export interface Refusal {
  readonly status: number;
  readonly error: JsonRpcError;
}

/**
 * What /mcp checks besides Host and Origin (those are every route's, in request-guards.ts): a
 * POST's Accept must take both application/json and text/event-stream (streamable-http "Sending
 * Messages to the Server"; else 406).
 */
export function checkMcpAccept(request: FastifyRequest): Refusal | null {
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

function acceptsBoth(accept: string | undefined): boolean {
  const types = (accept ?? '').split(',').map((part) => part.split(';')[0]?.trim().toLowerCase());
  if (types.includes('*/*')) return true;
  return types.includes('application/json') && types.includes('text/event-stream');
}

/**
 * Whether an Accept header allows text/event-stream (RFC 9110 12.5.1: none at all allows
 * anything; a type with q=0 is refused).
 */
export function acceptsEventStream(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const [type = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) return false;
    return type === 'text/event-stream' || type === 'text/*' || type === '*/*';
  });
}
