import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StopWatch } from './stop-watch.ts';

describe('StopWatch', () => {
  let now = 0;
  const orphans: [number, string | null][] = [];
  const watch = () =>
    new StopWatch({ graceMs: 200, now: () => now, onOrphan: (delta, signal) => orphans.push([delta, signal]) });
  beforeEach(() => {
    vi.useFakeTimers();
    now = 1_000;
    orphans.length = 0;
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('measures from the first stop to the exit, by the first signal', () => {
    const stop = watch();
    stop.stopped('stream_close');
    now += 30;
    stop.stopped('max_clock');
    now += 20;
    expect(stop.measured).toBeNull();
    stop.exited();
    expect(stop.measured).toEqual({ signal: 'stream_close', seconds: 0.05 });
    expect(orphans).toEqual([]);
  });

  it('counts a handler still running a grace period after its stop, until it exits', () => {
    const stop = watch();
    stop.stopped(null);
    vi.advanceTimersByTime(199);
    expect(orphans).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(orphans).toEqual([[1, null]]);
    stop.exited();
    stop.exited();
    expect(orphans).toEqual([
      [1, null],
      [-1, null],
    ]);
  });

  it('does not watch a request to stop at the next checkpoint, but does the release after it', () => {
    const stop = watch();
    stop.stopped('shutdown', false);
    vi.advanceTimersByTime(10_000);
    expect(orphans).toEqual([]);
    stop.stopped('shutdown');
    vi.advanceTimersByTime(200);
    expect(orphans).toEqual([[1, 'shutdown']]);
  });

  it('says nothing ran on when the stop is found after the handler returned', () => {
    const stop = watch();
    stop.exited();
    stop.stopped(null);
    vi.advanceTimersByTime(10_000);
    expect(stop.measured).toEqual({ signal: null, seconds: 0 });
    expect(orphans).toEqual([]);
  });

  it('measures nothing without a stop', () => {
    const stop = watch();
    stop.exited();
    expect(stop.measured).toBeNull();
  });
});
