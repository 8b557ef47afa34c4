import type { Timers } from '@taskgate/client';

/**
 * The client's Timers, run only when the test fires them: a test holds an answer back and then
 * decides when a clock runs out, instead of sleeping past it. `now` stands still.
 */
export function manualTimers() {
  const armed = new Map<number, { readonly ms: number; readonly run: () => void }>();
  const watching: { readonly ms: number; readonly wake: () => void }[] = [];
  let handles = 0;
  const timers: Timers = {
    now: () => 0,
    setTimeout: (run, ms) => {
      handles += 1;
      armed.set(handles, { ms, run });
      for (const watcher of watching.filter((watcher) => watcher.ms === ms)) {
        watching.splice(watching.indexOf(watcher), 1);
        watcher.wake();
      }
      return handles;
    },
    clearTimeout: (handle) => {
      armed.delete(handle as number);
    },
  };
  return {
    timers,
    /** Resolves once a timer of `ms` is armed (at once if one is). */
    armed(ms: number): Promise<void> {
      if ([...armed.values()].some((timer) => timer.ms === ms)) return Promise.resolve();
      return new Promise((wake) => watching.push({ ms, wake }));
    },
    /** Runs every timer armed for `ms`, as if that much time had passed for it. */
    fire(ms: number): void {
      for (const [handle, timer] of [...armed]) {
        if (timer.ms !== ms) continue;
        armed.delete(handle);
        timer.run();
      }
    },
  };
}
