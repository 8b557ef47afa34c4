import { TaskgateError } from '@taskgate/errors';
import type { DeadlineClock } from '@taskgate/reliability';

/** A clock of the call ran out; the transport's cancel has been sent. */
export function callTimedOut(method: string, clock: DeadlineClock, limitMs: number): TaskgateError {
  const what =
    clock === 'idle' ? `no progress for ${limitMs} ms (the idle clock)` : `${limitMs} ms in all (the max clock)`;
  return new TaskgateError('TG_CALL_TIMEOUT', `${method} timed out: ${what}; the server was told to stop`, {
    details: { clock, limitMs },
  });
}

/** The caller cancelled; the transport's cancel has been sent. */
export function callCancelled(method: string, reason: unknown): TaskgateError {
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'no reason given' : String(reason);
  return new TaskgateError('TG_CALL_CANCELLED', `${method} was cancelled (${why}); the server was told to stop`, {
    details: { reason: why },
  });
}
