import { describe, expect, it } from 'vitest';
import { CancelRetries, type CancelRetriesOptions } from './cancel-retries.ts';

// The retries run on injected timers: each test fires them in the order it chooses, so what a
// retry does after a failure, a success or a stop is forced, never waited for.
function harness(outcomes: ('ok' | 'down' | 'gone')[], overrides: Partial<CancelRetriesOptions> = {}) {
  const timers: { run: () => void; ms: number; cleared: boolean }[] = [];
  const calls: string[] = [];
  const logged: string[] = [];
  const retries = new CancelRetries({
    cancel: async (tenantId, taskId, reason, adoptions) => {
      calls.push(`${tenantId}/${taskId}: ${reason}${adoptions === 0 ? '' : ` (after ${adoptions} adoptions)`}`);
      const outcome = outcomes.shift() ?? 'ok';
      if (outcome === 'down') throw Object.assign(new Error('connect ECONNREFUSED'), { retry: true });
      if (outcome === 'gone') throw new Error('no task');
    },
    retryable: (error) => (error as { retry?: boolean }).retry === true,
    log: (_fields, message) => logged.push(message),
    random: () => 0.5,
    setTimer: (run, ms) => {
      const timer = { run, ms, cleared: false };
      timers.push(timer);
      return timer;
    },
    clearTimer: (timer) => {
      (timer as { cleared: boolean }).cleared = true;
    },
    ...overrides,
  });
  /** Fires the newest timer and lets its retry settle. */
  const fire = async () => {
    const timer = timers.at(-1);
    if (!timer || timer.cleared) throw new Error('no timer to fire');
    timer.run();
    for (let i = 0; i < 5; i += 1) await Promise.resolve();
  };
  return { retries, timers, calls, logged, fire };
}

describe('CancelRetries', () => {
  it('retries a failed cancel with doubling, jittered delays until it lands', async () => {
    const { retries, timers, calls, logged, fire } = harness(['down', 'down', 'ok']);
    retries.add('acme', 't1', 'the client went away');
    expect(retries.pending).toBe(1);
    await fire();
    await fire();
    expect(retries.pending).toBe(1);
    await fire();
    expect(calls).toEqual(Array(3).fill('acme/t1: the client went away'));
    expect(retries.pending).toBe(0);
    // Ceilings of 1 s, 2 s, 4 s, each jittered to half of itself by random() = 0.5.
    expect(timers.map((timer) => timer.ms)).toEqual([500, 1_000, 2_000]);
    expect(logged).toEqual(["a task's cancel landed on a retry"]);
  });

  it('caps the delay, and gives up after its attempts (the max clock ends the task)', async () => {
    const { retries, timers, logged, fire } = harness(Array(10).fill('down'), { maxAttempts: 4, maxDelayMs: 1_500 });
    retries.add('acme', 't1', 'gone');
    await fire();
    await fire();
    await fire();
    expect(timers.map((timer) => timer.ms)).toEqual([500, 750, 750]);
    expect(retries.pending).toBe(0);
    expect(logged).toEqual(["a task's cancel was given up after its retries; its max clock ends it"]);
  });

  it('keeps the fence it was given, and at most 1,000 characters of the client’s reason', async () => {
    const { retries, calls, fire } = harness(['ok']);
    const long = 'x'.repeat(5_000);
    retries.add('acme', 't1', long, 3);
    await fire();
    expect(calls).toEqual([`acme/t1: ${'x'.repeat(1_000)}… (after 3 adoptions)`]);
  });

  it('drops a cancel that cannot land (the task is gone), and holds one entry per task', async () => {
    const { retries, timers, logged, fire } = harness(['gone']);
    retries.add('acme', 't1', 'gone');
    retries.add('acme', 't1', 'gone again');
    expect(retries.pending).toBe(1);
    expect(timers).toHaveLength(1);
    await fire();
    expect(retries.pending).toBe(0);
    expect(logged).toEqual(["a task's cancel was given up: it cannot land"]);
  });

  it('gives up the oldest past its bound, and stops every timer on stop', async () => {
    const { retries, timers, logged } = harness([], { maxPending: 2 });
    retries.add('acme', 't1', 'gone');
    retries.add('acme', 't2', 'gone');
    retries.add('acme', 't3', 'gone');
    expect(retries.pending).toBe(2);
    expect(timers.map((timer) => timer.cleared)).toEqual([true, false, false]);
    expect(logged).toEqual(["a task's cancel was given up: more than 2 wait to be retried; its max clock ends it"]);
    retries.stop();
    expect(retries.pending).toBe(0);
    expect(timers.every((timer) => timer.cleared)).toBe(true);
    retries.add('acme', 't4', 'gone');
    expect(retries.pending).toBe(0);
  });
});
