import { describe, expect, it } from 'vitest';
import { CorrelationTable } from './correlation-table.ts';

function table(options: { tombstoneMs?: number; maxTombstones?: number } = {}) {
  let now = 1_000;
  const correlation = new CorrelationTable<string>({ ...options, now: () => now });
  return { correlation, advance: (ms: number) => (now += ms) };
}

describe('CorrelationTable', () => {
  it('hands out ids that only count up, and delivers a response to its waiter once', () => {
    const { correlation } = table();
    const first = correlation.open('a');
    const second = correlation.open('b');
    expect(second).toBeGreaterThan(first);
    expect(correlation.settle(first)).toEqual({ kind: 'deliver', entry: 'a' });
    // Answered: a second response for it is a stray, not a second delivery.
    expect(correlation.settle(first)).toEqual({ kind: 'unknown' });
    expect(correlation.open('c')).toBeGreaterThan(second);
  });

  it('recognises the response to an abandoned request as late, once, and drops it', () => {
    const { correlation } = table();
    const id = correlation.open('call');
    expect(correlation.abandon(id)).toBe('call');
    expect(correlation.settle(id)).toEqual({ kind: 'late', entry: 'call' });
    expect(correlation.settle(id)).toEqual({ kind: 'unknown' });
    expect(correlation.stats).toEqual({ pending: 0, tombstones: 0, lateDropped: 1, unknown: 1 });
  });

  it('abandoning an answered request leaves nothing behind', () => {
    const { correlation } = table();
    const id = correlation.open('call');
    correlation.settle(id);
    expect(correlation.abandon(id)).toBeUndefined();
    expect(correlation.stats.tombstones).toBe(0);
  });

  it('forgets a tombstone after tombstoneMs: a response after that is unknown', () => {
    const { correlation, advance } = table({ tombstoneMs: 500 });
    const id = correlation.open('call');
    correlation.abandon(id);
    advance(499);
    expect(correlation.stats.tombstones).toBe(1);
    advance(1);
    expect(correlation.stats.tombstones).toBe(0);
    expect(correlation.settle(id)).toEqual({ kind: 'unknown' });
  });

  it('keeps at most maxTombstones, dropping the oldest', () => {
    const { correlation } = table({ maxTombstones: 2 });
    const ids = ['a', 'b', 'c'].map((entry) => correlation.open(entry));
    for (const id of ids) correlation.abandon(id);
    expect(correlation.stats.tombstones).toBe(2);
    expect(correlation.settle(ids[0])).toEqual({ kind: 'unknown' });
    expect(correlation.settle(ids[2])).toEqual({ kind: 'late', entry: 'c' });
  });

  it('drains waiting requests when the connection goes, as tombstones, and never reuses their ids', () => {
    const { correlation } = table();
    const a = correlation.open('a');
    const b = correlation.open('b');
    correlation.settle(a);
    expect(correlation.drain()).toEqual(['b']);
    expect(correlation.stats).toMatchObject({ pending: 0, tombstones: 1 });
    // A resumed session delivering the old answer: late, not the answer to a new request.
    const c = correlation.open('c');
    expect(c).toBeGreaterThan(b);
    expect(correlation.settle(b)).toEqual({ kind: 'late', entry: 'b' });
    expect(correlation.settle(c)).toEqual({ kind: 'deliver', entry: 'c' });
  });

  it('counts a response whose id is not a number of ours as unknown', () => {
    const { correlation } = table();
    for (const id of ['1', null, undefined, 1.5, 99]) expect(correlation.settle(id)).toEqual({ kind: 'unknown' });
    expect(correlation.stats.unknown).toBe(5);
  });

  it('refuses limits that are not positive whole numbers', () => {
    expect(() => new CorrelationTable({ now: () => 0, tombstoneMs: 0 })).toThrow(RangeError);
    expect(() => new CorrelationTable({ now: () => 0, maxTombstones: 1.5 })).toThrow(RangeError);
  });
});
