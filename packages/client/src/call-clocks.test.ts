import { describe, expect, it } from 'vitest';
import { CallClocks, type Timers } from './call-clocks.ts';

/** Timers that run only when the test moves time. */
function manualTimers() {
  let now = 0;
  const due: { at: number; run: () => void; handle: number }[] = [];
  let handles = 0;
  const timers: Timers = {
    now: () => now,
    setTimeout: (run, ms) => {
      handles += 1;
      due.push({ at: now + ms, run, handle: handles });
      return handles;
    },
    clearTimeout: (handle) => {
      const index = due.findIndex((timer) => timer.handle === handle);
      if (index >= 0) due.splice(index, 1);
    },
  };
  const advance = (ms: number) => {
    const until = now + ms;
    for (;;) {
      due.sort((a, b) => a.at - b.at);
      const first = due[0];
      if (first === undefined || first.at > until) break;
      due.shift();
      now = first.at;
      first.run();
    }
    now = until;
  };
  return { timers, advance, armed: () => due.length };
}

describe('CallClocks', () => {
  it('ends a call with no progress on the idle clock', () => {
    const { timers, advance } = manualTimers();
    const expired: unknown[] = [];
    new CallClocks({ idleMs: 100, maxMs: 1_000 }, timers, (...args) => expired.push(args));
    advance(99);
    expect(expired).toEqual([]);
    advance(1);
    expect(expired).toEqual([['idle', 100]]);
  });

  it("a retry's clocks: the max clock runs from the call's start, the idle clock from the attempt's", () => {
    const { timers, advance } = manualTimers();
    advance(700);
    const expired: unknown[] = [];
    // The call began at 0 with max 1,000 ms; this attempt begins at 700 with idle 500 ms.
    new CallClocks({ idleMs: 500, maxMs: 1_000 }, timers, (...args) => expired.push(args), 0);
    advance(299);
    expect(expired).toEqual([]);
    advance(1);
    expect(expired).toEqual([['max', 1_000]]);
  });

  it('a retry that begins past the max clock ends at once on it', () => {
    const { timers, advance } = manualTimers();
    advance(1_200);
    const expired: unknown[] = [];
    new CallClocks({ idleMs: 100, maxMs: 1_000 }, timers, (...args) => expired.push(args), 0);
    advance(0);
    expect(expired).toEqual([['max', 1_000]]);
  });

  it('lets progress push the idle clock on, but never the max clock', () => {
    const { timers, advance } = manualTimers();
    const expired: unknown[] = [];
    const clocks = new CallClocks({ idleMs: 100, maxMs: 250 }, timers, (...args) => expired.push(args));
    for (let i = 0; i < 4; i++) {
      advance(60);
      clocks.progress();
    }
    // 240 ms in, progress every 60 ms: idle never ran out; max does at 250.
    expect(expired).toEqual([]);
    advance(10);
    expect(expired).toEqual([['max', 250]]);
  });

  it('fires the max clock even when the idle limit is longer than it', () => {
    const { timers, advance } = manualTimers();
    const expired: unknown[] = [];
    new CallClocks({ idleMs: 60_000, maxMs: 500 }, timers, (...args) => expired.push(args));
    advance(500);
    expect(expired).toEqual([['max', 500]]);
  });

  it('fires once, and not at all after stop()', () => {
    const { timers, advance, armed } = manualTimers();
    const expired: unknown[] = [];
    const clocks = new CallClocks({ idleMs: 100 }, timers, (...args) => expired.push(args));
    advance(1_000);
    clocks.progress();
    advance(1_000);
    expect(expired).toHaveLength(1);

    const stopped = new CallClocks({ idleMs: 100 }, timers, (...args) => expired.push(args));
    stopped.stop();
    expect(armed()).toBe(0);
    advance(1_000);
    expect(expired).toHaveLength(1);
  });

  it('arms nothing without limits', () => {
    const { timers, armed } = manualTimers();
    new CallClocks({}, timers, () => {
      throw new Error('no clock');
    });
    expect(armed()).toBe(0);
  });
});
