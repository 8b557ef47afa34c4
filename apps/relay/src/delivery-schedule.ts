import { type BackoffOptions, backoffDelay } from '@taskgate/reliability';

/** When the relay tries again, and how long one try may take: pure, so tested without I/O. */

/**
 * After a failed attempt (`attempts` made, this one included): milliseconds until the next, or null
 * when it was the last allowed and the row goes to dead-letter. The first retry's ceiling is
 * baseMs, doubling per attempt up to capMs; full jitter draws the delay from [0, ceiling).
 */
export function retryDelay(
  attempts: number,
  maxAttempts: number,
  backoff: BackoffOptions,
  random: () => number,
): number | null {
  if (attempts >= maxAttempts) return null;
  return backoffDelay(Math.max(0, attempts - 1), backoff, random);
}

/**
 * A request may take a third of the lease (at most 10 s): a claimed row waits at most one request
 * time for a free slot, then its own request, and the settlement still has a third left.
 */
export function requestTimeoutMs(leaseMs: number): number {
  return Math.max(100, Math.min(10_000, Math.floor(leaseMs / 3)));
}
