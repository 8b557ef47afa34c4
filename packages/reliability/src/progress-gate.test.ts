import { describe, expect, it } from 'vitest';
import { ProgressGate } from './progress-gate.ts';

describe('progress gate', () => {
  it('emits the first update immediately', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    expect(gate.offer({ progress: 1, total: 10, message: 'starting' }, 0)).toEqual({
      progress: 1,
      total: 10,
      message: 'starting',
    });
    expect(gate.nextDueAt()).toBeNull();
  });

  it('ignores a progress value that does not increase', () => {
    const gate = new ProgressGate({ intervalMs: 0 });
    expect(gate.offer({ progress: 5 }, 0)).not.toBeNull();
    expect(gate.offer({ progress: 5 }, 1)).toBeNull();
    expect(gate.offer({ progress: 4 }, 2)).toBeNull();
    expect(gate.offer({ progress: 6 }, 3)).toEqual({ progress: 6 });
  });

  it('compares with a held value too, so a smaller value never follows a larger one', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    expect(gate.offer({ progress: 5 }, 100)).toBeNull();
    expect(gate.offer({ progress: 3 }, 200)).toBeNull();
    expect(gate.due(1000)).toEqual({ progress: 5 });
  });

  it('holds updates within the interval and releases only the latest when it has passed', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    expect(gate.offer({ progress: 2, message: 'two' }, 100)).toBeNull();
    expect(gate.offer({ progress: 3, message: 'three' }, 500)).toBeNull();
    expect(gate.nextDueAt()).toBe(1000);
    expect(gate.due(999)).toBeNull();
    expect(gate.due(1000)).toEqual({ progress: 3, message: 'three' });
    expect(gate.due(5000)).toBeNull();
    expect(gate.nextDueAt()).toBeNull();
  });

  it('measures the next interval from the moment the held update was released', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    gate.offer({ progress: 2 }, 100);
    expect(gate.due(1400)).toEqual({ progress: 2 });
    expect(gate.offer({ progress: 3 }, 2000)).toBeNull();
    expect(gate.nextDueAt()).toBe(2400);
    expect(gate.offer({ progress: 4 }, 2400)).toEqual({ progress: 4 });
  });

  it('emits at most once per interval however many updates arrive', () => {
    const gate = new ProgressGate({ intervalMs: 100 });
    const emittedAt: number[] = [];
    for (let now = 0; now < 1000; now += 7) {
      if (gate.offer({ progress: now + 1 }, now) !== null) emittedAt.push(now);
      if (gate.due(now) !== null) emittedAt.push(now);
    }
    for (let i = 1; i < emittedAt.length; i++) {
      expect((emittedAt[i] as number) - (emittedAt[i - 1] as number)).toBeGreaterThanOrEqual(100);
    }
    expect(emittedAt.length).toBeGreaterThanOrEqual(9);
  });

  it('with a burst, lets that many through at once, then one per interval on average', () => {
    const gate = new ProgressGate({ intervalMs: 100, burst: 3 });
    // Three steps 50 ms apart: all told as they come.
    expect([0, 50, 100].map((now, i) => gate.offer({ progress: i + 1 }, now))).toEqual([
      { progress: 1 },
      { progress: 2 },
      { progress: 3 },
    ]);
    // Two more 10 ms later: the bucket (0.5 + 0.5 refilled, less three spent) is empty, so the
    // fourth is held and the fifth takes its place.
    const quick = new ProgressGate({ intervalMs: 100, burst: 3 });
    expect([0, 10, 20, 30, 40].map((now, i) => quick.offer({ progress: i + 1 }, now))).toEqual([
      { progress: 1 },
      { progress: 2 },
      { progress: 3 },
      null,
      null,
    ]);
    // Its token is whole at 100: 0.4 at 40, and 0.6 more over the 60 ms after.
    expect(quick.nextDueAt()).toBeCloseTo(100, 6);
    expect(quick.due(99)).toBeNull();
    expect(quick.due(100)).toEqual({ progress: 5 });
    // Sustained: an update every millisecond for 10 s leaves at most burst + 10 s / interval.
    const sustained = new ProgressGate({ intervalMs: 100, burst: 3 });
    let emitted = 0;
    for (let now = 0; now < 10_000; now += 1) {
      if (sustained.offer({ progress: now + 1 }, now) !== null) emitted += 1;
      if (sustained.due(now) !== null) emitted += 1;
    }
    expect(emitted).toBeGreaterThanOrEqual(100);
    expect(emitted).toBeLessThanOrEqual(3 + 100);
    expect(() => new ProgressGate({ intervalMs: 100, burst: 0 })).toThrow(RangeError);
    expect(() => new ProgressGate({ intervalMs: 100, burst: 1.5 })).toThrow(RangeError);
  });

  it('lets a newer update past the interval supersede a held one instead of sending both', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    gate.offer({ progress: 2 }, 100);
    expect(gate.offer({ progress: 3 }, 1200)).toEqual({ progress: 3 });
    expect(gate.nextDueAt()).toBeNull();
    expect(gate.due(5000)).toBeNull();
  });

  it('drops updates with non-finite progress or total', () => {
    const gate = new ProgressGate({ intervalMs: 0 });
    expect(gate.offer({ progress: Number.NaN }, 0)).toBeNull();
    expect(gate.offer({ progress: Number.POSITIVE_INFINITY }, 0)).toBeNull();
    expect(gate.offer({ progress: 1, total: Number.NaN }, 0)).toBeNull();
    expect(gate.offer({ progress: 1, total: Number.POSITIVE_INFINITY }, 0)).toBeNull();
    // A dropped update does not count as seen: the first well-formed one still goes out.
    expect(gate.offer({ progress: 1, total: 2 }, 0)).toEqual({ progress: 1, total: 2 });
  });

  it('sends nothing after close and drops what it was holding', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    gate.offer({ progress: 2 }, 100);
    expect(gate.closed).toBe(false);
    gate.close();
    expect(gate.closed).toBe(true);
    expect(gate.nextDueAt()).toBeNull();
    expect(gate.due(5000)).toBeNull();
    expect(gate.offer({ progress: 3 }, 5000)).toBeNull();
  });

  it('with a zero interval, emits every increasing update at once', () => {
    const gate = new ProgressGate({ intervalMs: 0 });
    expect([1, 2, 3].map((progress) => gate.offer({ progress }, 0))).toEqual([
      { progress: 1 },
      { progress: 2 },
      { progress: 3 },
    ]);
  });

  it('returns a copy, so a caller mutating its update cannot change what was held', () => {
    const gate = new ProgressGate({ intervalMs: 1000 });
    gate.offer({ progress: 1 }, 0);
    const update = { progress: 2, message: 'held' };
    gate.offer(update, 10);
    update.message = 'changed';
    expect(gate.due(1000)).toEqual({ progress: 2, message: 'held' });
  });

  it('refuses an interval that is not a non-negative integer and times that are not finite', () => {
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => new ProgressGate({ intervalMs: bad })).toThrow(/^intervalMs must be/);
    }
    const gate = new ProgressGate({ intervalMs: 10 });
    expect(() => gate.offer({ progress: 1 }, Number.NaN)).toThrow(RangeError);
    expect(() => gate.due(Number.NaN)).toThrow(RangeError);
  });
});
