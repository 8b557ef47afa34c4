import { describe, expect, it } from 'vitest';
import { shareSlots } from './slot-shares.ts';

const room = (entries: Record<string, number>) => Object.entries(entries).map(([queue, r]) => ({ queue, room: r }));

describe('shareSlots', () => {
  it('splits free slots evenly over queues with room, the remainder from the offset on', () => {
    expect(Object.fromEntries(shareSlots(7, room({ a: 32, b: 32, c: 32 }), 0))).toEqual({ a: 3, b: 2, c: 2 });
    expect(Object.fromEntries(shareSlots(7, room({ a: 32, b: 32, c: 32 }), 1))).toEqual({ a: 2, b: 3, c: 2 });
    expect(Object.fromEntries(shareSlots(7, room({ a: 32, b: 32, c: 32 }), 5))).toEqual({ a: 2, b: 2, c: 3 });
  });

  it('caps each queue by its own room and gives what a capped queue cannot use to the others', () => {
    expect(Object.fromEntries(shareSlots(10, room({ slow: 1, fast: 32 })))).toEqual({ slow: 1, fast: 9 });
    expect(Object.fromEntries(shareSlots(10, room({ a: 2, b: 3 })))).toEqual({ a: 2, b: 3 });
  });

  it('leaves out queues without room, and gives nothing when nothing is free', () => {
    expect(Object.fromEntries(shareSlots(4, room({ full: 0, over: -2, open: 8 })))).toEqual({ open: 4 });
    expect(shareSlots(0, room({ a: 4 })).size).toBe(0);
    expect(shareSlots(4, []).size).toBe(0);
  });

  it('never hands out more than is free or than any queue has room for', () => {
    for (let free = 0; free < 40; free++) {
      for (let offset = 0; offset < 5; offset++) {
        const queues = room({ a: 3, b: 0, c: 17, d: 1, e: 9 });
        const shares = shareSlots(free, queues, offset);
        const total = [...shares.values()].reduce((sum, n) => sum + n, 0);
        expect(total).toBe(Math.min(free, 3 + 17 + 1 + 9));
        for (const { queue, room: r } of queues) expect(shares.get(queue) ?? 0).toBeLessThanOrEqual(Math.max(0, r));
      }
    }
  });
});
