import { isTaskgateError } from '@taskgate/errors';
import { STREAM_ENDED } from './correlated-transport.ts';
import type { FailureKind } from './retry-plan.ts';

/** JSON-RPC -31503: the database did not answer, nothing was done (TG_SERVICE_UNAVAILABLE). */
const SERVICE_UNAVAILABLE = -31503;
/**
 * "Connection closed", the connection ended with the request open: -32000 from SDK v1, the
 * SdkError code `CONNECTION_CLOSED` from v2 (its stdio child gone).
 */
const CONNECTION_CLOSED = new Set<unknown>([-32000, 'CONNECTION_CLOSED']);
/** Errors of a fetch that never reached the server: nothing was sent. */
const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

/**
 * What a failed request says about whether it ran, for the retry matrix. The client's own errors
 * (a cancel, a clock) are final; a lost answer — the stream or connection ended, the socket
 * broke after the request went out — is `outcome-unknown`; the server saying it did nothing
 * (503, -31503) or a connection that never opened is `unavailable`.
 */
export function failureKind(error: unknown): FailureKind {
  if (isTaskgateError(error)) return 'final';
  const code = (error as { code?: unknown }).code;
  if (code === STREAM_ENDED.code || CONNECTION_CLOSED.has(code)) return 'outcome-unknown';
  if (code === SERVICE_UNAVAILABLE) return 'unavailable';
  const status =
    (error as { data?: { status?: unknown }; status?: unknown }).data?.status ?? (error as { status?: unknown }).status;
  if (status === 503) return 'unavailable';
  if (error instanceof TypeError && error.message === 'fetch failed') {
    const cause = (error as { cause?: { code?: unknown } }).cause;
    return typeof cause?.code === 'string' && NOT_SENT.has(cause.code) ? 'unavailable' : 'outcome-unknown';
  }
  return 'final';
}
