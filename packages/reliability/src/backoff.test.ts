import { describe, expect, it } from 'vitest';
import { backoffCeiling, backoffDelay, deterministicJitter, fnv1a32, jitteredDelay } from './backoff.ts';

const OPTIONS = { baseMs: 250, capMs: 8000 };
const JUST_UNDER_ONE = 1 - Number.EPSILON;

describe('backoff', () => {
  it('waits up to baseMs on the first attempt', () => {
    expect(backoffDelay(0, OPTIONS, () => JUST_UNDER_ONE)).toBe(249);
    expect(backoffDelay(0, OPTIONS, () => 0.5)).toBe(125);
  });

  it('doubles the ceiling each attempt until it reaches the cap, and never exceeds it', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 10, 100, 1100].map((attempt) => backoffCeiling(attempt, OPTIONS))).toEqual([
      250, 500, 1000, 2000, 4000, 8000, 8000, 8000, 8000, 8000,
    ]);
    for (let attempt = 0; attempt < 2000; attempt++) {
      expect(backoffDelay(attempt, OPTIONS, () => JUST_UNDER_ONE)).toBeLessThan(8000);
    }
  });

  it('gives zero when random() is zero', () => {
    for (const attempt of [0, 3, 50]) expect(backoffDelay(attempt, OPTIONS, () => 0)).toBe(0);
  });

  it('gives just under the ceiling when random() is close to one', () => {
    expect(backoffDelay(2, OPTIONS, () => JUST_UNDER_ONE)).toBe(999);
    expect(backoffDelay(9, OPTIONS, () => JUST_UNDER_ONE)).toBe(7999);
  });

  it('returns whole milliseconds', () => {
    expect(backoffDelay(1, OPTIONS, () => 0.123456)).toBe(61);
  });

  it('refuses an attempt that is not a non-negative integer', () => {
    for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => backoffDelay(bad, OPTIONS, () => 0)).toThrow(/^attempt must be/);
    }
  });

  it('refuses base and cap that are not positive integers, or a cap below the base', () => {
    expect(() => backoffDelay(0, { baseMs: 0, capMs: 100 }, () => 0)).toThrow(/^baseMs must be/);
    expect(() => backoffDelay(0, { baseMs: 10, capMs: Number.NaN }, () => 0)).toThrow(/^capMs must be/);
    expect(() => backoffDelay(0, { baseMs: 100, capMs: 10 }, () => 0)).toThrow(RangeError);
  });

  it('refuses a random source that leaves [0, 1), since it would break the cap', () => {
    for (const bad of [1, -0.1, 2, Number.NaN]) {
      expect(() => backoffDelay(9, OPTIONS, () => bad)).toThrow(/^random\(\) must return/);
    }
  });
});

describe('deterministic jitter', () => {
  it('implements 32-bit FNV-1a over UTF-8 bytes', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
    // é is two UTF-8 bytes, 0xc3 0xa9: hashing UTF-16 code units would give a different value.
    expect(fnv1a32('é')).toBe(0x1e9de8c1);
  });

  it('is the same for the same client and attempt, and stays in [0, 1)', () => {
    expect(deterministicJitter('client-1', 3)).toBe(deterministicJitter('client-1', 3));
    for (let attempt = 0; attempt < 1000; attempt++) {
      const jitter = deterministicJitter('client-1', attempt);
      expect(jitter).toBeGreaterThanOrEqual(0);
      expect(jitter).toBeLessThan(1);
    }
  });

  it('differs between clients and between attempts of one client', () => {
    expect(deterministicJitter('client-1', 0)).not.toBe(deterministicJitter('client-2', 0));
    const attempts = Array.from({ length: 10 }, (_, attempt) => deterministicJitter('client-1', attempt));
    expect(new Set(attempts).size).toBe(10);
  });

  it('spreads the attempts of one client across the whole range', () => {
    const deciles = new Array<number>(10).fill(0);
    for (let attempt = 0; attempt < 1000; attempt++) {
      const decile = Math.floor(deterministicJitter('client-7', attempt) * 10);
      deciles[decile] = (deciles[decile] ?? 0) + 1;
    }
    for (const count of deciles) expect(count).toBeGreaterThan(60);
  });

  it('plugs into backoffDelay as its random source', () => {
    const delay = backoffDelay(4, OPTIONS, () => deterministicJitter('client-1', 4));
    expect(delay).toBe(Math.floor(deterministicJitter('client-1', 4) * 4000));
    expect(backoffDelay(4, OPTIONS, () => deterministicJitter('client-1', 4))).toBe(delay);
  });
});

describe('jitteredDelay', () => {
  const options = { baseMs: 100, capMs: 1_000 };
  it('full: uniform under the ceiling; equal: the upper half; none: the ceiling', () => {
    expect(jitteredDelay('full', 2, options, () => 0)).toBe(0);
    expect(jitteredDelay('full', 2, options, () => 0.5)).toBe(200);
    expect(jitteredDelay('equal', 2, options, () => 0)).toBe(200);
    expect(jitteredDelay('equal', 2, options, () => 0.999)).toBe(399);
    expect(jitteredDelay('none', 2, options, () => 0.3)).toBe(400);
    expect(jitteredDelay('none', 20, options, () => 0.3)).toBe(1_000);
  });
});
