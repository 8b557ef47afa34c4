import { type BackoffOptions, backoffDelay } from '@taskgate/reliability';
import { isDatabaseUnavailable } from './connection-errors.ts';

export interface OutageRetryOptions {
  /** Stop retrying once this long has passed since the first failure; the last error is thrown. */
  readonly giveUpAfterMs: number;
  /** Aborting stops the retries (a stopping process); the last error is thrown. */
  readonly signal?: AbortSignal;
  /** Default: 100 ms doubling to 5 s, full jitter. */
  readonly backoff?: BackoffOptions;
  readonly random?: () => number;
  /** Told before each wait. */
  readonly onRetry?: (error: unknown, attempt: number, delayMs: number) => void;
}

const DEFAULT_BACKOFF: BackoffOptions = { baseMs: 100, capMs: 5_000 };

/**
 * Runs `operation`, and runs it again after a capped, jittered pause for as long as it fails
 * because the database is unreachable (isDatabaseUnavailable), up to a bound. For writes whose
 * outcome is already decided (a task's terminal status, a step's result): a Postgres restart should
 * delay them, not lose them. The operation must be safe to repeat after an ambiguous failure (a
 * commit whose answer was lost): every task write is fenced by its conditions, so a repeat finds
 * the work done and changes nothing. Any other error is thrown at once.
 */
export async function retryWhileUnavailable<T>(operation: () => Promise<T>, options: OutageRetryOptions): Promise<T> {
  const started = performance.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      const elapsed = performance.now() - started;
      if (!isDatabaseUnavailable(error) || options.signal?.aborted || elapsed >= options.giveUpAfterMs) throw error;
      const delay = Math.min(
        backoffDelay(Math.min(attempt, 30), options.backoff ?? DEFAULT_BACKOFF, options.random ?? Math.random),
        Math.max(0, options.giveUpAfterMs - elapsed),
      );
      options.onRetry?.(error, attempt, delay);
      if (!(await pause(delay, options.signal))) throw error;
    }
  }
}

/** Resolves true after `ms`, or false as soon as `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
