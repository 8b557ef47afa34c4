import { type ClaimedAttempt, isDatabaseUnavailable } from '@taskgate/db';
import { TaskReleasedError } from '@taskgate/sdk';

/** How often a delivery of a task a live worker holds tries the claim again. */
export const HELD_RECHECK_MS = 1_000;

export interface HeldDeliveryOptions {
  readonly taskId: string;
  /** The worker that holds the task, for the log. */
  readonly holder: string;
  /**
   * The claim under the liveness rule: the attempt once the holder is lost, null once the task
   * needs no run (the holder finished it), 'held' while the holder is alive.
   */
  readonly claim: (taskId: string) => Promise<ClaimedAttempt | null | 'held'>;
  /** Aborted when the worker drains: the delivery goes back to the queue. */
  readonly signal: AbortSignal;
  readonly recheckMs?: number;
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * A delivery of a task that a live worker still holds. pg-boss redelivers a job whose heartbeat
 * lapsed — after an outage longer than the queue's 10 s heartbeat, say, while the holder waited to
 * land its handler's decided outcome, or while its pool was too busy to touch the job. Claiming it
 * would start a new attempt and fence the holder out: its result would be lost (a safe tool runs
 * twice) or an unsafe tool's second attempt refused into reconciliation, for work that finished.
 * Taskgate's instance heartbeat, not pg-boss's job heartbeat, says whether a holder is alive, so
 * the delivery waits instead: it tries the claim again every `recheckMs` and resolves with the
 * attempt once the holder is judged lost (the sweeper's rule), or with null once the task needs no
 * run; a claim that finds the database unreachable is tried again at the next recheck. Bounded:
 * the holder ends the task by its max clock at the latest, hands it back if its attempt fails
 * (TaskRunner; its audit, handBackStrays, if that hand-back failed too), or is lost. A
 * draining worker hands the delivery back (TaskReleasedError: the pump fails it back to the queue).
 */
export async function awaitHolder(options: HeldDeliveryOptions): Promise<ClaimedAttempt | null> {
  const sleep = options.sleep ?? abortableSleep;
  for (;;) {
    await sleep(options.recheckMs ?? HELD_RECHECK_MS, options.signal);
    if (options.signal.aborted) {
      throw new TaskReleasedError(`the worker is stopping; task ${options.taskId} is held by ${options.holder}`);
    }
    // The database unreachable is no answer: asked again at the next recheck. Thrown, it would
    // fail the job back to the queue and spend one of its retries on each blip while the holder
    // runs (the sweeper leaves a live holder's task alone when they run out, but a holder that
    // dies after that has no delivery left to run it again).
    const claim = await options.claim(options.taskId).catch((error: unknown) => {
      if (isDatabaseUnavailable(error)) return 'held' as const;
      throw error;
    });
    if (claim !== 'held') return claim;
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const timer = setTimeout(done, ms);
    timer.unref();
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
