import type { ClaimedAttempt, TaskJobData } from '@taskgate/db';
import type { Job, PgBoss } from 'pg-boss';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { type FetchedJob, type FetchRequest, JobPump } from './job-pump.ts';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function job(id: string, queue = 'q'): FetchedJob {
  return { queue, job: { id, retryCount: 0, data: { taskId: id, tenantId: 't' } } as Job<TaskJobData>, claim: null };
}

const quiet = { info: () => {}, warn: () => {}, debug: () => {} };

/**
 * A pump of one slot over a fake queue: `complete` is held until the test lets it go, so the order
 * of "attempt over", "next fetch" and "job retired" is the test's, not the scheduler's.
 */
function onePump(runs: Promise<void>[]) {
  const completing = deferred();
  const completed: string[] = [];
  const fetches: number[] = [];
  const queue = [job('a'), job('b')];
  const secondFetch = deferred();
  const boss = {
    complete: async (_queue: string, attempts: { id: string }[]) => {
      await completing.promise;
      completed.push(...attempts.map((attempt) => attempt.id));
    },
    fail: async () => {},
    touch: async () => {},
  } as unknown as PgBoss;
  const pump = new JobPump({
    boss,
    queues: [{ name: 'q', concurrency: 1 }],
    concurrency: 1,
    pollIntervalMs: 60_000,
    heartbeatIntervalMs: 60_000,
    fetch: async ([request]) => {
      const count = (request as FetchRequest).count;
      fetches.push(count);
      if (fetches.length === 2) secondFetch.resolve();
      return queue.splice(0, count);
    },
    run: (_claim: ClaimedAttempt | null) => runs.shift() ?? new Promise<void>(() => {}),
    logger: quiet,
  });
  return { pump, completing, completed, fetches, secondFetch };
}

describe('JobPump', () => {
  it('keeps pumping through failed fetches (a database outage), saying so once and when it works again', async () => {
    const lines: { level: number; msg: string }[] = [];
    // A real pino logger: its methods need the logger as `this`.
    const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    const recovered = deferred();
    let fetches = 0;
    const pump = new JobPump({
      boss: { complete: async () => {}, fail: async () => {}, touch: async () => {} } as unknown as PgBoss,
      queues: [{ name: 'q', concurrency: 1 }],
      concurrency: 1,
      pollIntervalMs: 60_000,
      heartbeatIntervalMs: 60_000,
      fetch: async () => {
        fetches += 1;
        if (fetches <= 3)
          throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
        recovered.resolve();
        return [];
      },
      run: async () => {},
      logger,
    });
    pump.start();
    await recovered.promise;
    await pump.stopFetching();
    await pump.close();
    expect(
      lines.filter((line) => line.msg === 'fetching jobs failed; retrying with backoff').map((line) => line.level),
    ).toEqual([40, 20, 20]);
    expect(lines.some((line) => line.msg === 'fetching jobs works again')).toBe(true);
  }, 10_000);

  it('frees a slot when the attempt ends, before its job is retired', async () => {
    const [first, second] = [deferred(), deferred()];
    const { pump, completing, completed, fetches, secondFetch } = onePump([first.promise, second.promise]);
    pump.start();
    first.resolve();
    // The retirement of job a is still held; the one slot must already be fetching again.
    await secondFetch.promise;
    expect(fetches).toEqual([1, 1]);
    expect(completed).toEqual([]);
    completing.resolve();
    second.resolve();
    await pump.stopFetching();
    await pump.close();
    expect(completed).toEqual(['a', 'b']);
  }, 5_000);

  it('close() waits for the retirement of jobs whose attempt is over', async () => {
    const [first, second] = [deferred(), deferred()];
    const { pump, completing, completed, secondFetch } = onePump([first.promise, second.promise]);
    pump.start();
    first.resolve();
    await secondFetch.promise;
    await pump.stopFetching();
    second.resolve();
    let closed = false;
    const closing = pump.close().then(() => {
      closed = true;
    });
    // Several turns of the event loop: close() must still be waiting on the held retirement.
    for (let turn = 0; turn < 5; turn++) await new Promise((resolve) => setImmediate(resolve));
    expect(closed).toBe(false);
    completing.resolve();
    await closing;
    expect(completed).toEqual(['a', 'b']);
  }, 5_000);

  it('close() does not wait for an attempt that is still running', async () => {
    const { pump, completing, secondFetch } = onePump([Promise.resolve()]);
    pump.start();
    // Job a ended at once; job b's attempt never ends (a handler that ignores its signal).
    await secondFetch.promise;
    await pump.stopFetching();
    completing.resolve();
    await pump.close();
    expect(pump.running).toBe(1);
  }, 5_000);
});

/**
 * A pump over several fake queues whose jobs never end until the test ends them: each fetch is
 * recorded with what it asked of each queue, so shares and caps can be read off exactly.
 */
function manyQueues(depths: Record<string, number>, caps: Record<string, number>, concurrency: number) {
  const waiting = new Map(Object.entries(depths).map(([queue, depth]) => [queue, depth]));
  const asks: Record<string, number>[] = [];
  let waitedFor = 0;
  const pump = new JobPump({
    boss: { complete: async () => {}, fail: async () => {}, touch: async () => {} } as unknown as PgBoss,
    queues: Object.entries(caps).map(([name, cap]) => ({ name, concurrency: cap })),
    concurrency,
    pollIntervalMs: 60_000,
    heartbeatIntervalMs: 60_000,
    fetch: async (requests) => {
      asks.push(Object.fromEntries(requests.map((request) => [request.queue, request.count])));
      const jobs: FetchedJob[] = [];
      for (const { queue, count } of requests) {
        const take = Math.min(count, waiting.get(queue) ?? 0);
        waiting.set(queue, (waiting.get(queue) ?? 0) - take);
        for (let n = 0; n < take; n++) jobs.push(job(`${queue}-${asks.length}-${n}`, queue));
      }
      return jobs;
    },
    // Handlers that never end: every slot a fetch fills stays taken.
    run: () => new Promise<void>(() => {}),
    logger: quiet,
  });
  return {
    pump,
    asks,
    /** Resolves once the next fetch (counting from the last call) has been made and its jobs started. */
    waitForFetch: async () => {
      const target = ++waitedFor;
      while (asks.length < target) await new Promise((resolve) => setImmediate(resolve));
      // The jobs of that fetch start in the same turn; let the loop decide its next step.
      for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

describe('JobPump over several queues', () => {
  it('shares the free slots fairly between queues that have work, one fetch for all of them', async () => {
    const { pump, asks, waitForFetch } = manyQueues({ a: 100, b: 100 }, { a: 32, b: 32 }, 8);
    pump.start();
    await waitForFetch();
    await pump.stopFetching();
    await pump.close();
    // Both queues in one fetch, four slots each; then every slot is taken (handlers never end).
    expect(asks).toEqual([{ a: 4, b: 4 }]);
    expect([pump.runningIn('a'), pump.runningIn('b'), pump.running]).toEqual([4, 4, 8]);
  });

  it('keeps a tool under its own cap and gives the rest of the slots to the others', async () => {
    const { pump, asks, waitForFetch } = manyQueues({ slow: 100, fast: 100 }, { slow: 2, fast: 32 }, 10);
    pump.start();
    await waitForFetch();
    await pump.stopFetching();
    await pump.close();
    expect(asks[0]).toEqual({ slow: 2, fast: 8 });
    expect(pump.runningIn('slow')).toBe(2);
  });

  it('stops asking a queue that came back short until a wake-up names it', async () => {
    const { pump, asks, waitForFetch } = manyQueues({ a: 1, b: 100 }, { a: 32, b: 32 }, 6);
    pump.start();
    await waitForFetch(); // a: asked 3, got 1 (drained); b: asked 3, got 3 (full)
    await waitForFetch(); // only b is asked for the 2 slots left
    pump.wake('a');
    pump.wake('not-a-queue-of-this-pump');
    await pump.stopFetching();
    await pump.close();
    expect(asks.slice(0, 2)).toEqual([{ a: 3, b: 3 }, { b: 2 }]);
    expect(pump.running).toBe(6);
  });

  it('fetches a queue given by setQueues at once, and no more a queue it took away', async () => {
    const { pump, asks, waitForFetch } = manyQueues({ a: 1, b: 100, c: 3 }, { a: 32 }, 8);
    pump.start();
    await waitForFetch(); // a: asked 8, got 1; b and c are not this pump's yet
    pump.setQueues([
      { name: 'b', concurrency: 2 },
      { name: 'c', concurrency: 32 },
    ]);
    await waitForFetch(); // the new queues at once, b under its cap; c comes back short
    // Slots are free (6 of 8 run): a wake-up naming a and c fetches c alone, a being no more.
    pump.wake('a');
    pump.wake('c');
    await waitForFetch();
    await pump.stopFetching();
    await pump.close();
    expect(asks.slice(0, 3)).toEqual([{ a: 8 }, { b: 2, c: 5 }, { c: 2 }]);
    expect([pump.runningIn('a'), pump.runningIn('b'), pump.runningIn('c')]).toEqual([1, 2, 3]);
  });
});
