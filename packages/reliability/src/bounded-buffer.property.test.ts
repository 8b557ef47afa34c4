import { describe, expect, it } from 'vitest';
import { BoundedBuffer, type CoalesceMode } from './bounded-buffer.ts';

/** mulberry32: a tiny seeded PRNG, so the property test is the same on every run. */
function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

describe('bounded buffer under load', () => {
  for (const coalesce of ['adjacent', 'by-key'] satisfies CoalesceMode[]) {
    it(`(${coalesce}) stays within capacity and delivers every final, in order, across 100,000 random pushes`, () => {
      const random = seededRandom(coalesce === 'adjacent' ? 0x5eed : 0xbeef);
      const buffer = new BoundedBuffer<number>({ capacity: 16, coalesce });
      const finalsPushed: number[] = [];
      const finalsOut: number[] = [];
      const lastSeenPerKey = new Map<string, number>();
      // Counted rather than asserted inside the loop, which would make 100,000 expect() calls.
      let largestSize = 0;
      let refusedFinals = 0;
      let reorderedUpdates = 0;
      let refetches = 0;
      let key = 'task-0';

      const consume = (): void => {
        const item = buffer.shift();
        if (item === undefined) return;
        if (item.kind === 'final') {
          finalsOut.push(item.value);
          return;
        }
        // Dropping and coalescing may skip values, but never reorder one key's updates.
        if (item.value <= (lastSeenPerKey.get(item.key) ?? -1)) reorderedUpdates++;
        lastSeenPerKey.set(item.key, item.value);
      };

      for (let i = 0; i < 100_000; i++) {
        if (random() < 0.0005) {
          finalsPushed.push(i);
          if (!buffer.push({ kind: 'final', value: i }).accepted) refusedFinals++;
        } else {
          // Runs of one key exercise adjacent coalescing; 64 keys overflow even by-key coalescing.
          if (random() < 0.5) key = `task-${Math.floor(random() * 64)}`;
          buffer.push({ kind: 'replaceable', key, value: i });
        }
        largestSize = Math.max(largestSize, buffer.size);
        // A slow consumer: it reads less often than the producer writes, so the buffer stays full.
        if (random() < 0.3) consume();
        if (buffer.takeRefetchFlag()) refetches++;
      }
      while (buffer.size > 0) consume();

      expect(largestSize).toBe(16);
      expect(refusedFinals).toBe(0);
      expect(reorderedUpdates).toBe(0);
      expect(finalsPushed.length).toBeGreaterThan(10);
      expect(finalsOut).toEqual(finalsPushed);
      expect(buffer.dropped).toBeGreaterThan(0);
      expect(refetches).toBeGreaterThan(0);
    });
  }
});
