import { describe, expect, it } from 'vitest';
import { TwoClockDeadline } from './two-clock-deadline.ts';

const LESSON = { idleMs: 500, maxMs: 2000 };

describe('two-clock deadline', () => {
  it('expires by max at 2000 even though progress arrives steadily every 400 ms', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    for (const at of [400, 800, 1200]) deadline.recordProgress(at);
    expect(deadline.expired(1500)).toBeNull();
    deadline.recordProgress(1600);
    expect(deadline.expired(1999)).toBeNull();
    expect(deadline.expired(2000)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
  });

  it('never extends the max deadline, even for progress one millisecond before it', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    for (const at of [400, 800, 1200, 1600, 1999]) deadline.recordProgress(at);
    expect(deadline.expired(1999)).toBeNull();
    expect(deadline.expired(2000)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
  });

  it('starts the idle clock at idleFrom and keeps the max clock at startedAt (a retry)', () => {
    const deadline = new TwoClockDeadline(LESSON, 0, 1_800);
    // Idle alone would have expired at 500; from 1,800 it runs to 2,300, after max.
    expect(deadline.expired(1_999)).toBeNull();
    expect(deadline.expired(2_000)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
    expect(() => new TwoClockDeadline(LESSON, 100, 99)).toThrow(RangeError);
  });

  it('expires by idle 500 ms after the last progress when progress stops', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    for (const at of [400, 800, 1200]) deadline.recordProgress(at);
    expect(deadline.expired(1699)).toBeNull();
    expect(deadline.expired(1700)).toEqual({ clock: 'idle', deadlineAt: 1700, limitMs: 500 });
  });

  it('reports the earliest deadline ahead as progress moves the idle clock', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 500 });
    deadline.recordProgress(400);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 900 });
    deadline.recordProgress(800);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 1300 });
    deadline.recordProgress(1200);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 1700 });
    deadline.recordProgress(1600);
    expect(deadline.next()).toEqual({ clock: 'max', at: 2000 });
    expect(deadline.expired(2000)?.clock).toBe('max');
    expect(deadline.next()).toEqual({ clock: 'max', at: 2000 });
  });

  it('still names the deadline that ran out when progress is what found the expiry', () => {
    // The worker records progress and then re-arms its timer from next(): progress arriving as
    // the max clock runs out must leave a deadline to fire on, not none.
    const deadline = new TwoClockDeadline(LESSON, 0);
    for (const at of [400, 800, 1200, 1600]) deadline.recordProgress(at);
    deadline.recordProgress(2000);
    expect(deadline.next()).toEqual({ clock: 'max', at: 2000 });
    expect(deadline.expired(2001)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
  });

  it('reports max when both clocks run out at the same instant', () => {
    const deadline = new TwoClockDeadline({ idleMs: 500, maxMs: 2000 }, 0);
    for (const at of [400, 800, 1200, 1500]) deadline.recordProgress(at);
    expect(deadline.next()).toEqual({ clock: 'max', at: 2000 });
    expect(deadline.expired(2000)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
  });

  it('counts both clocks from the start time, not from zero', () => {
    const deadline = new TwoClockDeadline(LESSON, 10_000);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 10_500 });
    expect(deadline.expired(10_499)).toBeNull();
    expect(deadline.expired(10_500)).toEqual({ clock: 'idle', deadlineAt: 10_500, limitMs: 500 });
  });

  it('ignores progress at or after the max deadline', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    for (const at of [400, 800, 1200, 1600]) deadline.recordProgress(at);
    deadline.recordProgress(2000);
    expect(deadline.lastProgressAt).toBe(1600);
    expect(deadline.expired(2000)?.clock).toBe('max');
    deadline.recordProgress(2100);
    expect(deadline.expired(2100)).toEqual({ clock: 'max', deadlineAt: 2000, limitMs: 2000 });
  });

  it('stays expired once the idle deadline has passed, even if progress then arrives', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    expect(deadline.expired(500)?.clock).toBe('idle');
    deadline.recordProgress(499);
    deadline.recordProgress(600);
    expect(deadline.expired(700)).toEqual({ clock: 'idle', deadlineAt: 500, limitMs: 500 });
    expect(deadline.next()).toEqual({ clock: 'idle', at: 500 });
  });

  it('does not let late progress revive a call whose idle gap was already exceeded', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    deadline.recordProgress(400);
    deadline.recordProgress(950);
    expect(deadline.lastProgressAt).toBe(400);
    expect(deadline.expired(950)).toEqual({ clock: 'idle', deadlineAt: 900, limitMs: 500 });
  });

  it('does not move the idle clock back for progress reported out of order', () => {
    const deadline = new TwoClockDeadline(LESSON, 0);
    deadline.recordProgress(400);
    deadline.recordProgress(800);
    deadline.recordProgress(300);
    expect(deadline.next()).toEqual({ clock: 'idle', at: 1300 });
  });

  it('has no way to reset the idle clock except real progress', () => {
    const methods = Object.getOwnPropertyNames(TwoClockDeadline.prototype).filter(
      (name) =>
        name !== 'constructor' &&
        typeof Object.getOwnPropertyDescriptor(TwoClockDeadline.prototype, name)?.value === 'function',
    );
    expect(methods.sort()).toEqual(['expired', 'next', 'recordProgress']);
  });

  it('with only a max limit, never expires by idle however long the silence', () => {
    const deadline = new TwoClockDeadline({ maxMs: 2000 }, 0);
    expect(deadline.next()).toEqual({ clock: 'max', at: 2000 });
    expect(deadline.expired(1999)).toBeNull();
    expect(deadline.expired(2000)?.clock).toBe('max');
  });

  it('with only an idle limit, runs as long as progress keeps coming', () => {
    const deadline = new TwoClockDeadline({ idleMs: 500 }, 0);
    for (let at = 400; at <= 1_000_000; at += 400) deadline.recordProgress(at);
    expect(deadline.expired(1_000_000)).toBeNull();
    expect(deadline.next()).toEqual({ clock: 'idle', at: 1_000_500 });
  });

  it('with no limits, never expires and has nothing to arm', () => {
    const deadline = new TwoClockDeadline({}, 0);
    expect(deadline.next()).toBeNull();
    expect(deadline.expired(Number.MAX_SAFE_INTEGER)).toBeNull();
  });

  it('refuses limits that are not positive integers, naming the field', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new TwoClockDeadline({ idleMs: bad }, 0)).toThrow(
        new RangeError(`idleMs must be a positive integer number of milliseconds, got ${bad}`),
      );
      expect(() => new TwoClockDeadline({ maxMs: bad }, 0)).toThrow(/^maxMs must be a positive integer/);
    }
  });

  it('refuses times that are not finite', () => {
    expect(() => new TwoClockDeadline(LESSON, Number.NaN)).toThrow(RangeError);
    const deadline = new TwoClockDeadline(LESSON, 0);
    expect(() => deadline.recordProgress(Number.POSITIVE_INFINITY)).toThrow(RangeError);
    expect(() => deadline.expired(Number.NaN)).toThrow(RangeError);
  });
});
