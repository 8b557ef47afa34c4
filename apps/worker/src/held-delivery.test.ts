import type { ClaimedAttempt } from '@taskgate/db';
import { TaskReleasedError } from '@taskgate/sdk';
import { describe, expect, it } from 'vitest';
import { awaitHolder } from './held-delivery.ts';

// The waits are the test's: each sleep resolves when the test says, so the order is forced.
function steppedSleep() {
  const waiting: (() => void)[] = [];
  return {
    sleep: (_ms: number, signal: AbortSignal) =>
      new Promise<void>((resolve) => {
        waiting.push(resolve);
        signal.addEventListener('abort', () => resolve(), { once: true });
      }),
    async step() {
      await new Promise((resolve) => setImmediate(resolve));
      waiting.shift()?.();
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('awaitHolder', () => {
  it('tries the claim again after each wait, and gives the attempt once the holder is lost', async () => {
    const answers: (ClaimedAttempt | null | 'held')[] = ['held', 'held', { lostWorker: 'w1' } as ClaimedAttempt];
    let claims = 0;
    const { sleep, step } = steppedSleep();
    const waited = awaitHolder({
      taskId: 't1',
      holder: 'w1',
      signal: new AbortController().signal,
      sleep,
      claim: async () => {
        claims += 1;
        return answers.shift() as ClaimedAttempt | null | 'held';
      },
    });
    await step();
    expect(claims).toBe(1);
    await step();
    await step();
    await expect(waited).resolves.toEqual({ lostWorker: 'w1' });
    expect(claims).toBe(3);
  });

  it('ends with nothing to run once the holder finished the task', async () => {
    const { sleep, step } = steppedSleep();
    const waited = awaitHolder({
      taskId: 't1',
      holder: 'w1',
      signal: new AbortController().signal,
      sleep,
      claim: async () => null,
    });
    await step();
    await expect(waited).resolves.toBeNull();
  });

  it('hands the delivery back when the worker drains, without another claim', async () => {
    const draining = new AbortController();
    let claims = 0;
    const { sleep } = steppedSleep();
    const waited = awaitHolder({
      taskId: 't1',
      holder: 'w1',
      signal: draining.signal,
      sleep,
      claim: async () => {
        claims += 1;
        return 'held';
      },
    });
    draining.abort();
    await expect(waited).rejects.toBeInstanceOf(TaskReleasedError);
    expect(claims).toBe(0);
  });
});

describe('awaitHolder through a database blip', () => {
  it('tries again at the next recheck when the claim finds the database unreachable', async () => {
    // A rejection here would fail the job back to the queue: a pg-boss retry spent on every blip
    // while the holder runs, until the retries run out and the sweeper fails a live holder's task.
    const answers: (() => Promise<ClaimedAttempt | null | 'held'>)[] = [
      () => Promise.reject(Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })),
      async () => 'held',
      async () => null,
    ];
    const { sleep, step } = steppedSleep();
    const waited = awaitHolder({
      taskId: 't1',
      holder: 'w1',
      signal: new AbortController().signal,
      sleep,
      claim: () => (answers.shift() as () => Promise<ClaimedAttempt | null | 'held'>)(),
    });
    await step();
    await step();
    await step();
    await expect(waited).resolves.toBeNull();
    expect(answers).toEqual([]);
  });

  it('still fails on an error that is not an outage', async () => {
    const { sleep, step } = steppedSleep();
    const waited = awaitHolder({
      taskId: 't1',
      holder: 'w1',
      signal: new AbortController().signal,
      sleep,
      claim: () => Promise.reject(new Error('column "nope" does not exist')),
    });
    const settled = expect(waited).rejects.toThrow('column "nope" does not exist');
    await step();
    await settled;
  });
});
