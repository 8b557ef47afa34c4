import { describe, expect, it } from 'vitest';
import { Batcher } from './batcher.ts';

/** A batch runner the test releases by hand, recording every batch it was given. */
function heldRunner() {
  const batches: number[][] = [];
  const releases: (() => void)[] = [];
  const run = async (items: readonly number[]) => {
    batches.push([...items]);
    await new Promise<void>((resolve) => releases.push(resolve));
    if (items.includes(13) && items.length > 1) throw new Error('13 spoils the batch');
    if (items.includes(13)) throw new Error('13 fails alone');
    return items.map((item) => item * 10);
  };
  const releaseNext = async () => {
    // Macrotask turns, not microtasks: the batcher takes each batch on a setImmediate turn.
    while (releases.length === 0) await new Promise((resolve) => setImmediate(resolve));
    releases.shift()?.();
  };
  return { batches, run, releaseNext };
}

describe('Batcher', () => {
  it('sends an item on the next turn when idle and gathers the items that arrive while a batch is in flight', async () => {
    const runner = heldRunner();
    const batcher = new Batcher(runner.run);
    const first = batcher.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    expect(runner.batches).toEqual([[1]]);
    const rest = [2, 3, 4].map((item) => batcher.submit(item));
    await runner.releaseNext();
    expect(await first).toBe(10);
    await runner.releaseNext();
    expect(await Promise.all(rest)).toEqual([20, 30, 40]);
    expect(runner.batches).toEqual([[1], [2, 3, 4]]);
  });

  it('lets the callers a batch answered join the next batch together when they submit again at once', async () => {
    const runner = heldRunner();
    const batcher = new Batcher(runner.run);
    // Four callers in a loop: each submits again as soon as its previous item is answered.
    const rounds: number[][] = [];
    const caller = async (id: number) => {
      for (let round = 0; round < 3; round++) {
        await batcher.submit(id * 100 + round);
        // A few awaits between the answer and the next submit, as real callers have.
        await Promise.resolve();
        await Promise.resolve();
      }
    };
    const callers = [1, 2, 3, 4].map(caller);
    for (let release = 0; release < 3; release++) await runner.releaseNext();
    await Promise.all(callers);
    for (const batch of runner.batches) rounds.push(batch.map((item) => item % 100));
    expect(rounds).toEqual([
      [0, 0, 0, 0],
      [1, 1, 1, 1],
      [2, 2, 2, 2],
    ]);
  });

  it('retries a failed batch item by item, so only the bad item fails', async () => {
    const runner = heldRunner();
    const batcher = new Batcher(runner.run);
    const head = batcher.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const outcomes = [12, 13, 14].map((item) => batcher.submit(item).then(String, (error: Error) => error.message));
    for (let release = 0; release < 5; release++) await runner.releaseNext();
    await head;
    expect(await Promise.all(outcomes)).toEqual(['120', '13 fails alone', '140']);
    expect(runner.batches).toEqual([[1], [12, 13, 14], [12], [13], [14]]);
  });

  it('honours maxBatch and the item order', async () => {
    const runner = heldRunner();
    const batcher = new Batcher(runner.run, { maxBatch: 2, order: (a, b) => b - a });
    const all = [5, 1, 9, 3, 7].map((item) => batcher.submit(item));
    for (let release = 0; release < 3; release++) await runner.releaseNext();
    await Promise.all(all);
    expect(runner.batches).toEqual([[5, 1], [9, 3], [7]]);
  });

  it('with two lanes, shares what waits between two batches in flight at once', async () => {
    const runner = heldRunner();
    const batcher = new Batcher(runner.run, { lanes: 2 });
    const first = [1, 2, 3, 4, 5, 6, 7, 8].map((item) => batcher.submit(item));
    // Both batches start before either is released.
    while (runner.batches.length < 2) await new Promise((resolve) => setImmediate(resolve));
    expect(runner.batches).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7, 8],
    ]);
    // While both lanes are busy, newcomers wait; when one lane frees, they all go in it.
    const later = [9, 10, 11].map((item) => batcher.submit(item));
    await runner.releaseNext();
    while (runner.batches.length < 3) await new Promise((resolve) => setImmediate(resolve));
    expect(runner.batches[2]).toEqual([9, 10, 11]);
    await runner.releaseNext();
    await runner.releaseNext();
    expect(await Promise.all([...first, ...later])).toEqual([10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110]);
  });

  it('refuses a maxBatch or lanes below one', () => {
    expect(() => new Batcher(async () => [], { lanes: 0 })).toThrow(RangeError);
    expect(() => new Batcher(async () => [], { maxBatch: 0 })).toThrow(RangeError);
  });
});
