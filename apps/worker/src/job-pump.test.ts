import type { ClaimedAttempt, TaskJobData } from '@taskgate/db';
import type { Job, PgBoss } from 'pg-boss';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { type FetchedJob, JobPump } from './job-pump.ts';

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

function job(id: string): FetchedJob {
  return { job: { id, retryCount: 0, data: { taskId: id, tenantId: 't' } } as Job<TaskJobData>, claim: null };
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
    queue: 'q',
    concurrency: 1,
    pollIntervalMs: 60_000,
    heartbeatIntervalMs: 60_000,
    fetch: async (count) => {
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
      queue: 'q',
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
