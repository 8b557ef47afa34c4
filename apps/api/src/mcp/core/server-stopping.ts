import { TaskgateError, toJsonRpcError } from '@taskgate/errors';
import type { JsonRpcError } from '@taskgate/protocol';

/**
 * The reason a call's signal aborts when the server closes with the call still waiting: a task
 * the client may be handed is handed over (it polls it elsewhere) instead of being cancelled.
 */
export class ServerStopping extends Error {
  /** The signal a cancel it causes is recorded with (cancelSignalOf). */
  readonly signal = 'shutdown';
  constructor() {
    super('the server is shutting down');
    this.name = 'ServerStopping';
  }
}

/**
 * The answer of a request the server's shutdown ended: a definitive, retryable error rather than
 * a cut connection (a client would wait on that until its own timeout). Retry-After: 1. A call's
 * request-mode task was cancelled; any other request (a tasks/result wait) changed nothing.
 */
export function stoppedCallError(method = 'tools/call'): JsonRpcError {
  const message =
    method === 'tools/call'
      ? 'the server is shutting down; call again: this call was cancelled'
      : 'the server is shutting down; send the request again';
  return toJsonRpcError(new TaskgateError('TG_SERVICE_UNAVAILABLE', message, { details: { retryAfterSeconds: 1 } }));
}
