import type { JsonRpcId } from './json-rpc.ts';

export interface CancelledParams {
  readonly requestId: JsonRpcId;
  readonly reason: string | null;
}

/**
 * The params of `notifications/cancelled`, or null when they are malformed — which, like an
 * unknown or already-completed id, the receiver ignores without a reply (basic/patterns/cancellation).
 */
export function parseCancelledParams(params: unknown): CancelledParams | null {
  if (params === null || typeof params !== 'object') return null;
  const { requestId, reason } = params as { requestId?: unknown; reason?: unknown };
  const validId = typeof requestId === 'string' || (typeof requestId === 'number' && Number.isSafeInteger(requestId));
  if (!validId) return null;
  if (reason !== undefined && typeof reason !== 'string') return null;
  return { requestId: requestId as JsonRpcId, reason: reason ?? null };
}
