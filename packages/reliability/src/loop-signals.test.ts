import { afterEach, describe, expect, it, vi } from 'vitest';
import { LoopSignals } from './loop-signals.ts';

/** Whether `promise` has settled, after every pending microtask has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

describe('LoopSignals', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('ends a slot wait on a freed slot, not on a wake-up', async () => {
    vi.useFakeTimers();
    const signals = new LoopSignals();
    const waiting = signals.waitFor('slot');
    signals.wake();
    expect(await settled(waiting)).toBe(false);
    signals.slotFreed();
    expect(await settled(waiting)).toBe(true);
  });

  it('ends a wake wait on a wake-up, on a freed slot, or when its time is up', async () => {
    vi.useFakeTimers();
    const signals = new LoopSignals();
    const byWake = signals.waitFor('wake', 1_000);
    signals.wake();
    expect(await settled(byWake)).toBe(true);
    const bySlot = signals.waitFor('wake', 1_000);
    signals.slotFreed();
    expect(await settled(bySlot)).toBe(true);
    const byTime = signals.waitFor('wake', 1_000);
    await vi.advanceTimersByTimeAsync(999);
    expect(await settled(byTime)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(byTime)).toBe(true);
  });

  it('drops a signal nobody waits for: a later wait still waits', async () => {
    vi.useFakeTimers();
    const signals = new LoopSignals();
    signals.slotFreed();
    signals.wake();
    const waiting = signals.waitFor('wake', 1_000);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(await settled(waiting)).toBe(true);
  });

  it('close() ends the current wait and every later one returns at once', async () => {
    vi.useFakeTimers();
    const signals = new LoopSignals();
    const waiting = signals.waitFor('slot');
    signals.close();
    expect(signals.closed).toBe(true);
    expect(await settled(waiting)).toBe(true);
    expect(await settled(signals.waitFor('slot'))).toBe(true);
  });
});
