import { isErrorCode, TaskgateError } from '@taskgate/errors';
import type { DeadlineClock } from '@taskgate/reliability';

/**
 * What became of the work a given-up call started: a plain call's cancel went out with the
 * transport's own means; a call that became a task is cancelled with tasks/cancel, a request
 * whose answer comes later — and a task may still end completed if it finished first.
 */
export type CallStop =
  | { readonly kind: 'request' }
  /** `ended`: the terminal status the client had already seen, when it had — nothing is cancelled then. */
  | { readonly kind: 'task'; readonly taskId: string; readonly ended?: string };

/**
 * What the cancel did, as far as it is known when the call rejects — at once, before any answer to
 * a tasks/cancel: what that answer says comes later, to onError (given-up-cancels.ts).
 */
function stopped(stop: CallStop): string {
  if (stop.kind === 'request') return 'the server was told to stop';
  if (stop.ended !== undefined) {
    return `task ${stop.taskId} had already ended ${stop.ended}, so no tasks/cancel was sent (look it up with tasks/get)`;
  }
  return `tasks/cancel is being sent for task ${stop.taskId}, which stops at its next checkpoint unless it finishes first (close() waits for the answer; a refusal, or none by then, goes to onError; the task's status says how it ended)`;
}

function stopDetails(stop: CallStop): Record<string, unknown> {
  if (stop.kind === 'request') return {};
  return stop.ended === undefined ? { taskId: stop.taskId } : { taskId: stop.taskId, ended: stop.ended };
}

/** A clock of the call ran out; its cancel is on its way (CallStop). */
export function callTimedOut(
  method: string,
  clock: DeadlineClock,
  limitMs: number,
  stop: CallStop = { kind: 'request' },
): TaskgateError {
  const what =
    clock === 'idle' ? `no progress for ${limitMs} ms (the idle clock)` : `${limitMs} ms in all (the max clock)`;
  return new TaskgateError('TG_CALL_TIMEOUT', `${method} timed out: ${what}; ${stopped(stop)}`, {
    details: { clock, limitMs, ...stopDetails(stop) },
  });
}

/** The caller cancelled; its cancel is on its way (CallStop). */
export function callCancelled(method: string, reason: unknown, stop: CallStop = { kind: 'request' }): TaskgateError {
  const why = reason instanceof Error ? reason.message : reason === undefined ? 'no reason given' : String(reason);
  return new TaskgateError('TG_CALL_CANCELLED', `${method} was cancelled (${why}); ${stopped(stop)}`, {
    details: { reason: why, ...stopDetails(stop) },
  });
}

/** What a caller needs to find out whether a call whose answer was lost took effect. */
export interface CallHandle {
  readonly tool: string;
  /** The idempotency key the call carried: look it up (GET /v1/idempotency-keys/{key}). */
  readonly idempotencyKey: string | null;
  /** sha256 of the canonical JSON of the arguments, as the server's ledger keeps it. */
  readonly argumentsFingerprint: string;
  readonly attempts: number;
  readonly retryClass: string;
}

/** Sent, answer lost, and not to be repeated by the client: the caller reconciles. */
export function callOutcomeUnknown(handle: CallHandle, why: string): TaskgateError {
  const lookUp =
    handle.idempotencyKey === null
      ? 'look the task up before calling again'
      : `look up idempotency key ${JSON.stringify(handle.idempotencyKey)} before calling again`;
  return new TaskgateError(
    'TG_CALL_OUTCOME_UNKNOWN',
    `${handle.tool} was sent and its answer lost after ${handle.attempts} attempt(s), and it is not retried (${why}): ${lookUp}`,
    { details: { handle } },
  );
}

/**
 * Connecting failed before anything was sent: the URL, and the innermost cause there is. A 401
 * (or the SDK's UnauthorizedError) is TG_UNAUTHORIZED instead: the server is there, the
 * credentials are not what it takes.
 */
export function serverUnreachable(url: string, error: unknown): TaskgateError {
  const status = (error as { data?: { status?: unknown }; status?: unknown } | undefined)?.data?.status;
  if (status === 401 || (error as { name?: unknown } | undefined)?.name === 'UnauthorizedError') {
    return new TaskgateError(
      'TG_UNAUTHORIZED',
      `${url} refused the credentials: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
  let cause: unknown = error;
  while ((cause as { cause?: unknown })?.cause !== undefined) cause = (cause as { cause: unknown }).cause;
  const detail =
    cause instanceof Error ? `${(cause as { code?: string }).code ?? cause.name}: ${cause.message}` : String(cause);
  const outer = error instanceof Error ? error.message : String(error);
  return new TaskgateError(
    'TG_SERVER_UNREACHABLE',
    `could not connect to ${url}: ${outer === detail ? outer : `${outer} (${detail})`}`,
    {
      cause: error,
    },
  );
}

/**
 * A request the server refused before reading it as a request — a 4xx whose body is a JSON-RPC
 * error with no id (it could not tell which request it was: a body it could not parse), which
 * the SDK can only raise as "Error POSTing to endpoint" — as the coded error the server named.
 * A 401 (sign-in), 404 (a session gone), 429 and 5xx keep their own handling.
 */
export function serverRefusal(error: unknown): TaskgateError | null {
  const data = (error as { data?: { status?: unknown; text?: unknown } } | undefined)?.data;
  const status = data?.status;
  if (typeof status !== 'number' || status < 400 || status > 499 || [401, 404, 429].includes(status)) return null;
  if (typeof data?.text !== 'string') return null;
  let body: { error?: { message?: unknown; data?: { code?: unknown } } };
  try {
    body = JSON.parse(data.text) as typeof body;
  } catch {
    return null;
  }
  const code = body?.error?.data?.code;
  const message = body?.error?.message;
  if (typeof code !== 'string' || !isErrorCode(code) || typeof message !== 'string') return null;
  return new TaskgateError(code, message.replace(/^Parse error: /, ''), {
    cause: error,
    details: { status },
  });
}
