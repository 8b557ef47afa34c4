import { describe, expect, it } from 'vitest';
import { requestTimeoutMs, retryDelay } from './delivery-schedule.ts';

describe('retry schedule', () => {
  const backoff = { baseMs: 1_000, capMs: 300_000 };
  const almostOne = () => 1 - Number.EPSILON;

  it('draws the first retry from [0, baseMs) and doubles the ceiling per attempt up to the cap', () => {
    expect(retryDelay(1, 10, backoff, () => 0)).toBe(0);
    expect(retryDelay(1, 10, backoff, almostOne)).toBe(999);
    expect(retryDelay(2, 10, backoff, almostOne)).toBe(1_999);
    expect(retryDelay(5, 10, backoff, () => 0.5)).toBe(8_000);
    expect(retryDelay(40, 100, backoff, almostOne)).toBe(299_999);
  });

  it('dead-letters the attempt that reaches maxAttempts', () => {
    expect(retryDelay(9, 10, backoff, () => 0.5)).not.toBeNull();
    expect(retryDelay(10, 10, backoff, () => 0.5)).toBeNull();
    expect(retryDelay(1, 1, backoff, () => 0.5)).toBeNull();
  });

  it('gives each request a third of the lease, at most 10 s', () => {
    expect(requestTimeoutMs(30_000)).toBe(10_000);
    expect(requestTimeoutMs(6_000)).toBe(2_000);
    expect(requestTimeoutMs(1_000)).toBe(333);
  });
});
