import {
  claimAttempt,
  findReconciliationItem,
  finishIrreversibleStep,
  listReconciliationItems,
  type ReconciliationItem,
  readSteps,
  startIrreversibleStep,
  TaskAnnouncer,
  type TaskRecord,
} from '@taskgate/db';
import { defineTool } from '@taskgate/sdk';
import { ToolRegistry } from '@taskgate/tools';
import { CancelWatcher, TaskRunner } from '@taskgate/worker';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/databases.ts';
import { sampleValue, scrape, scrapeUntil } from '../support/metrics.ts';
import {
  type Barrier,
  barrier,
  type Platform,
  silentLogger,
  startPlatform,
  waitForTask,
} from '../support/task-platform.ts';

// ctx.step(name, fn, { irreversible: true }): a cancel, a clock or a lost outcome after such a
// step opens a reconciliation item; a later attempt never runs a step whose outcome is unknown.
const database = useTestDatabase();

/** Per-call knobs, by the call's `label` argument. */
interface Script {
  charges: number;
  /** Resolved when the charge has started; the charge waits for `release` if set. */
  readonly started: Barrier;
  readonly release?: Barrier;
  /** The charge throws (a timeout talking to the payment API, say). */
  readonly fails?: boolean;
  /** After the charge, the handler checkpoints until this is resolved. */
  readonly hold?: Barrier;
}
const scripts = new Map<string, Script>();
function script(label: string, options: Omit<Script, 'charges' | 'started'> = {}): Script {
  const entry: Script = { charges: 0, started: barrier(), ...options };
  scripts.set(label, entry);
  return entry;
}

const charge = defineTool<{ label: string; options?: unknown }>({
  name: 'charge_card',
  description: 'charges once, irreversibly',
  inputSchema: { type: 'object', properties: { label: { type: 'string' }, options: {} }, required: ['label'] },
  retry: 'safe',
  async handler({ label, options }, ctx) {
    const entry = scripts.get(label) as Script;
    await ctx.step('reserve', async () => ({ reserved: label }));
    const paid = await ctx.step(
      'charge',
      async () => {
        entry.charges += 1;
        entry.started.resolve();
        if (entry.release) await entry.release.promise;
        if (entry.fails) throw new Error('payment API did not answer in 10 s');
        return { chargeId: `ch_${label}` };
      },
      (options ?? { irreversible: true }) as never,
    );
    if (entry.hold) {
      const hold = entry.hold;
      let held = true;
      void hold.promise.then(() => {
        held = false;
      });
      while (held) {
        await ctx.checkpoint();
        await ctx.sleep(5);
      }
    }
    return { content: [{ type: 'text', text: JSON.stringify(paid) }] };
  },
});
const slowCharge = defineTool<{ label: string }>({
  ...charge,
  name: 'slow_charge',
  description: 'charges once, irreversibly, under a 300 ms clock',
  timeouts: { maxMs: 300 },
} as never);

/** Two branches of a fan-out name the same irreversible step (with a step before, or none). */
let doublePays = 0;
const doublePay = defineTool<{ warm: boolean }>({
  name: 'double_pay',
  description: 'pays from two branches under one step name',
  inputSchema: { type: 'object', properties: { warm: { type: 'boolean' } }, required: ['warm'] },
  retry: 'safe',
  async handler({ warm }, ctx) {
    if (warm) await ctx.step('look up', async () => 'found');
    const pay = () =>
      ctx.step(
        'pay',
        async () => {
          doublePays += 1;
          await ctx.sleep(20);
          return { paymentId: `pay_${doublePays}` };
        },
        { irreversible: true },
      );
    const [first, second] = await ctx.all([pay, pay]);
    return { content: [{ type: 'text', text: JSON.stringify([first, second]) }] };
  },
});
/** A handler that catches its irreversible step's failure and completes anyway. */
const swallow = defineTool({
  name: 'swallow_failure',
  description: 'goes on past an irreversible step that threw',
  inputSchema: { type: 'object' },
  retry: 'safe',
  async handler(_input, ctx) {
    try {
      await ctx.step(
        'pay',
        async () => {
          throw new Error('payment API timed out');
        },
        { irreversible: true },
      );
    } catch {
      // "It probably did not go through."
    }
    return { content: [{ type: 'text', text: 'done' }] };
  },
});

let platform: Platform;
beforeAll(async () => {
  platform = await startPlatform(database.url, { tools: [charge, slowCharge, doublePay, swallow] as never });
});
afterAll(async () => {
  await platform.stop();
});

const ended = (id: string) =>
  waitForTask(
    () => platform.service.get('acme', id),
    (task: TaskRecord) => ['completed', 'failed', 'cancelled'].includes(task.status),
  );
const itemOf = (taskId: string) =>
  sql<{ id: string }>`SELECT id::text AS id FROM reconciliation_items WHERE task_id = ${taskId}`
    .execute(platform.db)
    .then(({ rows }) => (rows[0] ? findReconciliationItem(platform.db, 'acme', rows[0].id) : null));

describe('an irreversible step', () => {
  beforeAll(async () => {
    await platform.startWorker({ checkpointReadIntervalMs: 10 });
  });
  afterAll(async () => {
    // The later tests play the workers themselves.
    await platform.worker?.stop();
    platform.worker = null;
  });

  it('opens an abandoned-with-effects item when the task is cancelled after the step took effect', async () => {
    const before = await scrape();
    const entry = script('cancelled', { hold: barrier() });
    const task = await platform.service.create('acme', { tool: 'charge_card', arguments: { label: 'cancelled' } });
    await entry.started.promise;
    await waitForTask(
      () => readSteps(platform.db, task.id),
      (steps) => steps.get('charge')?.state === 'done',
    );
    await platform.service.cancel('acme', task.id, 'customer changed their mind');
    expect(await ended(task.id)).toMatchObject({ status: 'cancelled' });
    const item = await itemOf(task.id);
    expect(item).toMatchObject({
      tool: 'charge_card',
      kind: 'abandoned_with_effects',
      reason: 'the task ended cancelled after an irreversible step took effect',
      resolvedAt: null,
      details: {
        status: 'cancelled',
        attempt: 1,
        cancelReason: 'customer changed their mind',
        steps: [
          // A reversible step is listed without its result; the irreversible one with it.
          expect.objectContaining({ name: 'reserve', state: 'done', irreversible: false }),
          expect.objectContaining({
            name: 'charge',
            state: 'done',
            irreversible: true,
            result: { chargeId: 'ch_cancelled' },
          }),
        ],
      },
    });
    expect((item?.details.steps as Record<string, unknown>[] | undefined)?.[0]).not.toHaveProperty('result');
    expect(entry.charges).toBe(1);
    // The worker counted it too, by tool.
    const labels = { tool: 'charge_card', outcome: 'effects' };
    const after = await scrapeUntil(
      'the abandoned run counted',
      (current) =>
        sampleValue(current, 'taskgate_abandoned_with_effects_total', labels) >
        sampleValue(before, 'taskgate_abandoned_with_effects_total', labels),
    );
    expect(
      sampleValue(after, 'taskgate_abandoned_with_effects_total', labels) -
        sampleValue(before, 'taskgate_abandoned_with_effects_total', labels),
    ).toBe(1);
  });

  it('opens no item when the task completes', async () => {
    const entry = script('completed');
    const task = await platform.service.create('acme', { tool: 'charge_card', arguments: { label: 'completed' } });
    expect(await ended(task.id)).toMatchObject({ status: 'completed' });
    expect(await itemOf(task.id)).toBeNull();
    expect(entry.charges).toBe(1);
  });

  it('opens an unknown-outcome item when its function throws and the task fails', async () => {
    const entry = script('throws', { fails: true });
    const task = await platform.service.create('acme', { tool: 'charge_card', arguments: { label: 'throws' } });
    expect(await ended(task.id)).toMatchObject({
      status: 'failed',
      statusMessage: 'payment API did not answer in 10 s',
    });
    expect(await itemOf(task.id)).toMatchObject({
      kind: 'unknown_outcome',
      reason: "the task ended failed while an irreversible step's outcome was unknown",
      details: { steps: expect.arrayContaining([expect.objectContaining({ name: 'charge', state: 'started' })]) },
    });
    expect(entry.charges).toBe(1);
  });

  it('records a step that finishes after its clock ended the task, and the item learns it', async () => {
    const entry = script('late', { release: barrier() });
    const task = await platform.service.create('acme', { tool: 'slow_charge', arguments: { label: 'late' } });
    await entry.started.promise;
    // The max clock fails the task at its deadline, while the charge is still out.
    expect(await ended(task.id)).toMatchObject({ status: 'failed' });
    expect(await itemOf(task.id)).toMatchObject({ kind: 'unknown_outcome' });
    entry.release?.resolve();
    const item = await waitForTask(
      () => itemOf(task.id),
      (found) => found?.kind === 'abandoned_with_effects',
    );
    expect(item).toMatchObject({
      reason: 'the task ended failed while an irreversible step ran; the step then took effect',
      details: {
        status: 'failed',
        steps: expect.arrayContaining([
          expect.objectContaining({ name: 'charge', state: 'done', result: { chargeId: 'ch_late' } }),
        ]),
      },
    });
  });

  it('runs once when two branches of a fan-out name the same step, both get its result', async () => {
    for (const warm of [false, true]) {
      doublePays = 0;
      const task = await platform.service.create('acme', { tool: 'double_pay', arguments: { warm } });
      const done = await ended(task.id);
      expect(done.status).toBe('completed');
      expect(doublePays).toBe(1);
      const text = (done.result as { content: { text: string }[] }).content[0]?.text ?? '';
      expect(JSON.parse(text)).toEqual([{ paymentId: 'pay_1' }, { paymentId: 'pay_1' }]);
      expect(await itemOf(task.id)).toBeNull();
    }
  });

  it('opens an unknown-outcome item when the handler completes past a step that threw', async () => {
    const task = await platform.service.create('acme', { tool: 'swallow_failure', arguments: {} });
    expect(await ended(task.id)).toMatchObject({ status: 'completed' });
    expect(await itemOf(task.id)).toMatchObject({
      kind: 'unknown_outcome',
      reason: "the task completed while an irreversible step's outcome was unknown",
      details: { status: 'completed', steps: [expect.objectContaining({ name: 'pay', state: 'started' })] },
    });
  });

  it('refuses options of the wrong type instead of coercing them', async () => {
    for (const [label, options] of [
      ['string-flag', { irreversible: 'yes' }],
      ['number-options', 1],
    ] as const) {
      const entry = script(label);
      const task = await platform.service.create('acme', { tool: 'charge_card', arguments: { label, options } });
      const failed = await ended(task.id);
      expect(failed.status).toBe('failed');
      expect(failed.statusMessage).toMatch(/ctx\.step options/);
      expect(entry.charges).toBe(0);
      expect(await itemOf(task.id)).toBeNull();
    }
  });
});

describe('a later attempt', () => {
  /** Attempt 1 is claimed by a worker that dies; `before` plays what it did; attempt 2 runs here. */
  async function afterLostAttempt(label: string, before: (task: TaskRecord) => Promise<void>): Promise<TaskRecord> {
    const { task } = await platform.service.submit('acme', { tool: 'charge_card', arguments: { label } });
    await claimAttempt(platform.writer, task.id, 'worker-that-died');
    await before(task);
    const redelivered = await claimAttempt(platform.writer, task.id, 'next-worker');
    const runner = new TaskRunner({
      db: platform.db,
      announcer: new TaskAnnouncer(platform.db),
      tools: new ToolRegistry([charge] as never),
      watcher: new CancelWatcher({ db: platform.db, listener: null, pollIntervalMs: 60_000, logger: silentLogger }),
      logger: silentLogger,
      checkpointReadIntervalMs: 250,
      progressWriteIntervalMs: 100,
    });
    await runner.run(redelivered);
    return platform.service.get('acme', task.id);
  }

  it('never runs again a step that an attempt started and never recorded', async () => {
    const entry = script('died-mid-charge');
    const task = await afterLostAttempt('died-mid-charge', async (lost) => {
      expect(await startIrreversibleStep(platform.db, { taskId: lost.id, attempt: 1, name: 'charge' })).toBe(true);
    });
    expect(task).toMatchObject({ status: 'failed', attempt: 2 });
    expect(task.error).toMatchObject({ code: -32603, data: { code: 'TG_STEP_OUTCOME_UNKNOWN', step: 'charge' } });
    expect(entry.charges).toBe(0);
    expect(await itemOf(task.id)).toMatchObject({
      kind: 'unknown_outcome',
      details: {
        status: 'failed',
        attempt: 2,
        steps: expect.arrayContaining([expect.objectContaining({ state: 'started', attempt: 1 })]),
      },
    });
  });

  it('gets a finished irreversible step back without running it, and completes', async () => {
    const entry = script('died-after-charge');
    const task = await afterLostAttempt('died-after-charge', async (lost) => {
      await startIrreversibleStep(platform.db, { taskId: lost.id, attempt: 1, name: 'charge' });
      await finishIrreversibleStep(platform.db, {
        taskId: lost.id,
        attempt: 1,
        name: 'charge',
        result: { chargeId: 'ch_first' },
      });
    });
    expect(task).toMatchObject({ status: 'completed', attempt: 2 });
    expect(JSON.stringify(task.result)).toContain('ch_first');
    expect(entry.charges).toBe(0);
    expect(await itemOf(task.id)).toBeNull();
  });
});

/** Until one statement of this database, whose text holds `fragment`, waits for a lock. */
const untilWaitingOnLock = (fragment: string) =>
  waitForTask(
    () =>
      sql<{ waiting: number }>`
        SELECT count(*)::int AS waiting FROM pg_stat_activity
        WHERE datname = current_database() AND wait_event_type = 'Lock'
          AND query LIKE ${`%${fragment}%`}`.execute(platform.db),
    ({ rows }) => rows[0]?.waiting === 1,
  );

describe('the start of an irreversible step and a terminal transition', () => {
  async function workingTask(label: string): Promise<TaskRecord> {
    const { task } = await platform.service.submit('acme', { tool: 'charge_card', arguments: { label } });
    await claimAttempt(platform.writer, task.id, 'worker-under-test');
    return task;
  }

  it('refuses the start when the transition commits first (the start waits for its lock)', async () => {
    const task = await workingTask('transition-first');
    let started: Promise<boolean> | undefined;
    await platform.db.transaction().execute(async (tx) => {
      await sql`UPDATE tasks SET status = 'cancelled', finished_at = now() WHERE id = ${task.id}`.execute(tx);
      started = startIrreversibleStep(platform.db, { taskId: task.id, attempt: 1, name: 'charge' });
      // It is waiting for the row lock this transaction holds: it has not answered.
      await untilWaitingOnLock('INSERT INTO task_steps');
    });
    expect(await started).toBe(false);
    expect(await itemOf(task.id)).toBeNull();
  });

  it('makes the transition see the step when the start commits first', async () => {
    const task = await workingTask('start-first');
    let ending: Promise<unknown> | undefined;
    await platform.db.transaction().execute(async (tx) => {
      expect(await startIrreversibleStep(tx, { taskId: task.id, attempt: 1, name: 'charge' })).toBe(true);
      ending = sql`UPDATE tasks SET status = 'cancelled', finished_at = now() WHERE id = ${task.id}`.execute(
        platform.db,
      );
      await untilWaitingOnLock('UPDATE tasks SET status');
    });
    await ending;
    expect(await itemOf(task.id)).toMatchObject({ kind: 'unknown_outcome' });
  });

  it('brings the item up to date when a step finishes while its task is ending', async () => {
    const task = await workingTask('finish-during-transition');
    const step = { taskId: task.id, attempt: 1, name: 'charge' };
    expect(await startIrreversibleStep(platform.db, step)).toBe(true);
    let finishing: Promise<boolean> | undefined;
    await platform.db.transaction().execute(async (tx) => {
      // The transition's trigger sees the step started: an unknown-outcome item, not yet committed.
      await sql`UPDATE tasks SET status = 'cancelled', finished_at = now() WHERE id = ${task.id}`.execute(tx);
      finishing = finishIrreversibleStep(platform.db, { ...step, result: { chargeId: 'ch_race' } });
      await untilWaitingOnLock('FOR SHARE');
    });
    // The task had ended: the attempt may not go on, but the item learnt the result.
    expect(await finishing).toBe(false);
    expect(await itemOf(task.id)).toMatchObject({
      kind: 'abandoned_with_effects',
      details: { steps: [expect.objectContaining({ name: 'charge', state: 'done', result: { chargeId: 'ch_race' } })] },
    });
  });

  it('answers a retried start or finish of the same attempt as the first', async () => {
    const task = await workingTask('retried-writes');
    const step = { taskId: task.id, attempt: 1, name: 'charge' };
    expect(await startIrreversibleStep(platform.db, step)).toBe(true);
    expect(await startIrreversibleStep(platform.db, step)).toBe(true);
    // Another attempt's start is refused: it does not hold the task.
    expect(await startIrreversibleStep(platform.db, { ...step, attempt: 2 })).toBe(false);
    expect(await finishIrreversibleStep(platform.db, { ...step, result: { chargeId: 'x' } })).toBe(true);
    expect(await finishIrreversibleStep(platform.db, { ...step, result: { chargeId: 'x' } })).toBe(true);
    expect(await finishIrreversibleStep(platform.db, { ...step, attempt: 2, result: { chargeId: 'x' } })).toBe(false);
    expect((await readSteps(platform.db, task.id)).get('charge')).toEqual({
      state: 'done',
      irreversible: true,
      result: { chargeId: 'x' },
    });
  });
});

describe('listing items', () => {
  it('pages newest first, filters by state, and keeps tenants apart', async () => {
    const all = await listReconciliationItems(platform.db, { tenantId: 'acme', filter: 'all', limit: 500 });
    expect(all.length).toBeGreaterThanOrEqual(4);
    const ids = all.map((item: ReconciliationItem) => BigInt(item.id));
    expect([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(ids);
    const first = await listReconciliationItems(platform.db, { tenantId: 'acme', filter: 'all', limit: 2 });
    const second = await listReconciliationItems(platform.db, {
      tenantId: 'acme',
      filter: 'all',
      limit: 2,
      before: first.at(-1)?.id,
    });
    expect([...first, ...second].map((item) => item.id)).toEqual(all.slice(0, 4).map((item) => item.id));
    expect(await listReconciliationItems(platform.db, { tenantId: 'other', filter: 'all', limit: 10 })).toEqual([]);
    expect(await findReconciliationItem(platform.db, 'other', all[0]?.id as string)).toBeNull();
    for (const id of ['0', 'abc', '1e3', '99999999999999999999', '-1']) {
      expect(await findReconciliationItem(platform.db, 'acme', id)).toBeNull();
    }
  });
});
