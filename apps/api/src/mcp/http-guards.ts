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
