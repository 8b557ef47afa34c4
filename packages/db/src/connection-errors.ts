import { isTaskgateError } from '@taskgate/errors';

/**
 * Node's socket errors that mean the server could not be reached or the connection broke, and the
 * SQLSTATEs of the same: class 08 (connection exception), 57P01 admin_shutdown (a fast stop),
 * 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up or shutting down), 53300
 * too_many_connections, and 55P03 as the embedded Postgres uses it for a transaction wait that
 * ran out.
 */
const UNAVAILABLE_CODES =
  /^(ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN|08[0-9A-Z]{3}|57P0[123]|53300)$/;

/**
 * node-pg reports a broken connection with messages and no code: the socket ended under a query,
 * a client that had a connection error is used again, the pool could not connect in time, or the
 * pool is already closed.
 */
const UNAVAILABLE_MESSAGES =
  /^(Connection terminated( unexpectedly| due to connection timeout)?|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout exceeded when trying to connect|Cannot use a pool after calling end on the pool|Connection ended unexpectedly)/;

const TASKGATE_UNAVAILABLE = ['TG_DB_UNREACHABLE', 'TG_SERVICE_UNAVAILABLE', 'TG_EMBEDDED_TRANSACTION_WAIT'] as const;

/**
 * Whether an error says the database is unreachable right now (an outage, a restart, a broken
 * connection), as opposed to a statement that failed on a database that answered. The first kind
 * is worth a retry after a pause and is a 503 to a client; the second is a bug or a bad request.
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  if (TASKGATE_UNAVAILABLE.some((code) => isTaskgateError(error, code))) return true;
  const { code, message, cause } = error as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof code === 'string' && UNAVAILABLE_CODES.test(code)) return true;
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.test(message)) return true;
  // net.connect to a name with several addresses fails with one error per address.
  if (error instanceof AggregateError && error.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1))) {
    return true;
  }
  return isDatabaseUnavailable(cause, depth + 1);
}
