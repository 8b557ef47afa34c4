import { TaskgateError } from '@taskgate/errors';

/** One key names one intent: a call with the key and other arguments (or operation) is refused. */
export function keyMismatch(key: string, operation: string): TaskgateError {
  return new TaskgateError(
    'TG_IDEMPOTENCY_KEY_MISMATCH',
    `idempotency key ${JSON.stringify(key)} was used for ${operation} with other arguments; nothing was done`,
    { details: { reason: 'idempotency_key_mismatch', operation } },
  );
}

/** The first call with the key has not finished: come back after `retryAfterSeconds`. */
export function keyInProgress(key: string, taskId: string | null, retryAfterSeconds: number): TaskgateError {
  return new TaskgateError(
    'TG_IDEMPOTENCY_KEY_IN_PROGRESS',
    `the first call with idempotency key ${JSON.stringify(key)} (task ${taskId}) is still running`,
    { details: { taskId, retryAfterSeconds } },
  );
}
