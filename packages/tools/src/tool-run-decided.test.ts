import { defineTool, type ToolContext, type ToolResult } from '@taskgate/sdk';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RunObserver } from './run-observer.ts';
import type { CommitOutcome, RunOutcome, RunProgress, RunStore, StepRecord } from './run-store.ts';
import { ToolRun } from './tool-run.ts';

// Once a handler has returned (or thrown), its outcome is decided: a clock that runs out while the
// write of that outcome is held up (a database outage, a lock, a busy completion batch) must not
// fail the task. The store here holds every decided write until the test lets it through, and the
// clocks are fake timers the test moves past both deadlines meanwhile: the order is forced.
const silent = { info: () => {}, warn: () => {}, debug: () => {} };

/** A task row in memory whose decided writes wait for `letThrough()`; the first outcome wins. */
class HeldStore implements RunStore {
  outcome: RunOutcome | null = null;
  readonly writes: string[] = [];
  readonly progressWrites: RunProgress[] = [];
  /** Progress writes of this value and above fail, as in an outage (they are not retried). */
  failProgressFrom = Number.POSITIVE_INFINITY;
  #open = false;
  #waiting: (() => void)[] = [];
  readonly #steps = new Map<string, StepRecord>();

  /** Lets the held writes through, and every later one at once. */
  letThrough(): void {
    this.#open = true;
    for (const resolve of this.#waiting.splice(0)) resolve();
  }

  /** Resolves once `count` decided writes are waiting (or went through). */
  async untilWrites(count: number): Promise<void> {
    while (this.writes.length < count) await vi.advanceTimersByTimeAsync(0);
  }

  #held(what: string): Promise<void> {
    this.writes.push(what);
    if (this.#open) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #decide(outcome: RunOutcome): boolean {
    if (this.outcome !== null) return false;
    this.outcome = outcome;
    return true;
  }

  async peekCancelState() {
    return null;
  }
  async readCancelState() {
    return { attempt: 1, status: this.outcome?.status ?? 'working', cancelRequested: false, cancelReason: null };
  }
  async recordProgress(progress: RunProgress): Promise<boolean> {
    if (progress.value >= this.failProgressFrom) return false;
    this.progressWrites.push(progress);
    return true;
  }
  async readSteps() {
    return this.#steps;
  }
  async startIrreversibleStep(name: string) {
    this.#steps.set(name, { state: 'started', irreversible: true, attempt: 1 });
    return true;
  }
  async recordStep(name: string, result: unknown, irreversible: boolean) {
    this.#steps.set(name, { state: 'done', result, irreversible });
    return true;
  }
  async park() {
    return false;
  }
  async complete(result: ToolResult, reason: string, progress?: RunProgress) {
    await this.#held('complete');
    return this.#decide({ status: 'completed', result, reason, progress });
  }
  async commit(
    effects: (tx: never) => Promise<ToolResult>,
    reason: string,
    progress?: RunProgress,
  ): Promise<CommitOutcome> {
    await this.#held('commit');
    if (this.outcome !== null) return { kind: 'superseded', status: this.outcome.status };
    const result = await effects({} as never);
    this.#decide({ status: 'completed', result, reason, progress });
    return { kind: 'completed', result };
  }
  async finish(outcome: RunOutcome) {
    await this.#held(`finish:${outcome.status}`);
    return this.#decide(outcome);
  }
  async release() {
    return false;
  }
  async recordCancelObserved() {}
}

type Path = 'complete' | 'commit' | 'irreversible step';

function runOf(
  store: HeldStore,
  handler: (ctx: ToolContext) => Promise<ToolResult>,
  options: { path?: Path; idleMs?: number | null; maxMs?: number | null } = {},
) {
  const events: { finished: string[]; abandoned: string[] } = { finished: [], abandoned: [] };
  const observer: RunObserver = {
    finished: (event) => events.finished.push(event.status),
    abandoned: (event) => events.abandoned.push(event.outcome),
  };
  const tool = defineTool({
    name: 'decided',
    description: 'returns as the test says',
    inputSchema: { type: 'object' },
    retry: 'safe',
    handler: async (_args, ctx) => handler(ctx),
  });
  const run = new ToolRun(
    {
      id: 'decided-test',
      tenantId: 'default',
      tool: tool.name,
      arguments: {},
      attempt: 1,
      // With a key, the completion is the transactional commit (the stored result commits with it).
      idempotencyKey: options.path === 'commit' ? 'key-1' : null,
      inputResponses: {},
      cancelReason: null,
      idleTimeoutMs: options.idleMs === undefined ? 1_000 : options.idleMs,
      maxTimeoutMs: options.maxMs === undefined ? 5_000 : options.maxMs,
    },
    tool as never,
    {
      store,
      elapsedMs: 0,
      retryable: true,
      logger: silent,
      checkpointReadIntervalMs: Number.POSITIVE_INFINITY,
      progressWriteIntervalMs: 0,
      now: Date.now,
      observer,
    },
  );
  return { run, events };
}

const DONE: ToolResult = { content: [{ type: 'text', text: 'done' }] };

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a handler that returned, while its write is held up', () => {
  for (const path of ['complete', 'commit', 'irreversible step'] as const) {
    for (const clock of ['idle', 'max'] as const) {
      it(`completes the task although its ${clock} clock ran out during the write (${path})`, async () => {
        const store = new HeldStore();
        const { run, events } = runOf(
          store,
          async (ctx) => {
            if (path === 'irreversible step') {
              await ctx.step('charge', async () => ({ charged: true }), { irreversible: true });
            }
            return DONE;
          },
          // Only the clock under test runs: the other one is off.
          { path, idleMs: clock === 'idle' ? 1_000 : null, maxMs: clock === 'max' ? 1_000 : null },
        );
        const running = run.run();
        await store.untilWrites(1);
        expect(store.writes).toEqual([path === 'commit' ? 'commit' : 'complete']);
        // Long past the deadline, with the write still held: the clock decides nothing.
        await vi.advanceTimersByTimeAsync(60_000);
        expect(store.writes).toHaveLength(1);
        store.letThrough();
        await running;
        expect(store.outcome).toMatchObject({ status: 'completed', result: DONE, reason: 'handler returned' });
        expect(store.writes).toHaveLength(1);
        expect(events.finished).toEqual(['completed']);
        // Nothing was abandoned: the irreversible step's task completed.
        expect(events.abandoned).toEqual([]);
      });
    }
  }

  for (const clock of ['idle', 'max'] as const) {
    it(`completes the task although its ${clock} clock ran out while its ctx.commit was held`, async () => {
      // The handler has not returned yet, but its final commit is its decided outcome: the
      // clock must not race that transaction with a failure of its own when the database is back.
      const store = new HeldStore();
      const { run, events } = runOf(store, async (ctx) => ctx.commit(async () => DONE), {
        idleMs: clock === 'idle' ? 1_000 : null,
        maxMs: clock === 'max' ? 1_000 : null,
      });
      const running = run.run();
      await store.untilWrites(1);
      expect(store.writes).toEqual(['commit']);
      await vi.advanceTimersByTimeAsync(60_000);
      expect(store.writes).toEqual(['commit']);
      store.letThrough();
      await running;
      expect(store.outcome).toMatchObject({ status: 'completed', result: DONE, reason: 'handler committed' });
      expect(store.writes).toEqual(['commit']);
      expect(events.finished).toEqual(['completed']);
    });
  }

  it('still ends a ctx.commit stuck on work that honours ctx.signal, failed by the clock that ran out', async () => {
    // Every path ends: the clock's stop reaches what the commit's effects wait on, and once the
    // commit has decided nothing, the clock's failure is written.
    const store = new HeldStore();
    store.letThrough();
    const { run, events } = runOf(store, async (ctx) =>
      ctx.commit(async () => {
        await ctx.sleep(600_000);
        return DONE;
      }),
    );
    const running = run.run();
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(store.writes).toEqual(['commit', 'finish:failed']);
    expect(store.outcome).toMatchObject({ status: 'failed', reason: 'timeout:idle', error: { code: -32001 } });
    expect(events.finished).toEqual(['failed']);
  });

  it('runs the clocks again for a handler that goes on after its ctx.commit decided nothing', async () => {
    const store = new HeldStore();
    store.letThrough();
    const { run } = runOf(store, async (ctx) => {
      await ctx
        .commit(async () => {
          throw new Error('the effects failed');
        })
        .catch(() => {});
      await ctx.sleep(60_000);
      return DONE;
    });
    const running = run.run();
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(store.outcome).toMatchObject({ status: 'failed', reason: 'timeout:idle', error: { code: -32001 } });
  });

  it('fails the task with the error the handler threw, not with the clock that ran out while that write was held', async () => {
    const store = new HeldStore();
    const { run, events } = runOf(store, async () => {
      throw new Error('the card was declined');
    });
    const running = run.run();
    await store.untilWrites(1);
    await vi.advanceTimersByTimeAsync(60_000);
    store.letThrough();
    await running;
    expect(store.writes).toEqual(['finish:failed']);
    expect(store.outcome).toMatchObject({
      status: 'failed',
      error: { code: -32603, message: 'the card was declined' },
      reason: 'handler threw',
    });
    expect(events.finished).toEqual(['failed']);
  });

  it('still fails a handler that is running when its clock runs out', async () => {
    // The control: the clocks themselves still work while the handler has not returned.
    const store = new HeldStore();
    store.letThrough();
    const { run } = runOf(store, async (ctx) => {
      await ctx.sleep(60_000);
      return DONE;
    });
    const running = run.run();
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(store.outcome).toMatchObject({ status: 'failed', reason: 'timeout:idle', error: { code: -32001 } });
  });

  it("carries the handler's last progress with its completion when the progress write did not store it", async () => {
    const store = new HeldStore();
    store.failProgressFrom = 15;
    const { run } = runOf(store, async (ctx) => {
      ctx.progress(14, 30);
      // The database went away after 14: the last progress write fails, and is not retried.
      ctx.progress(30, 30, 'done');
      return DONE;
    });
    const running = run.run();
    await store.untilWrites(1);
    store.letThrough();
    await running;
    expect(store.progressWrites.map((progress) => progress.value)).toEqual([14]);
    expect(store.outcome).toMatchObject({ status: 'completed', progress: { value: 30, total: 30, message: 'done' } });
  });

  it('carries no progress with the completion when the last one was stored', async () => {
    const store = new HeldStore();
    const { run } = runOf(store, async (ctx) => {
      ctx.progress(30, 30);
      return DONE;
    });
    const running = run.run();
    await store.untilWrites(1);
    store.letThrough();
    await running;
    expect(store.outcome?.progress).toBeUndefined();
    expect(store.progressWrites.map((progress) => progress.value)).toEqual([30]);
  });

  it('carries the last progress with a timeout that ended the run', async () => {
    const store = new HeldStore();
    store.letThrough();
    store.failProgressFrom = 0;
    const { run } = runOf(store, async (ctx) => {
      ctx.progress(7, 30);
      await ctx.sleep(60_000);
      return DONE;
    });
    const running = run.run();
    await vi.advanceTimersByTimeAsync(1_000);
    await running;
    expect(store.outcome).toMatchObject({ status: 'failed', reason: 'timeout:idle', progress: { value: 7 } });
  });
});
